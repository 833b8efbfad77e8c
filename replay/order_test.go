package replay

import "testing"

// Policy A serves the smallest waiting request first. On one
// A100 a 7g runs until 100 s; a second 7g arrives at 1 s and a 1g at 2 s.
// When the GPU frees, migpro/A-size starts the 1g first (the 7g then waits
// for it); arrival order with backfill starts the 7g, and so does largest
// first.
func TestPolicyAServesTheSmallestFirst(t *testing.T) {
	jobs := []Job{
		{ID: "first-7g", FullRuntime: 100, Mem: Fixed(30 * GiB), Profile: "7g.40gb"},
		{ID: "next-7g", Arrival: 1, FullRuntime: 100, Mem: Fixed(30 * GiB), Profile: "7g.40gb"},
		{ID: "late-1g", Arrival: 2, FullRuntime: 50, Mem: Fixed(2 * GiB), Profile: "1g.5gb"},
	}
	for _, c := range []struct {
		policy, first string
	}{{"migpro/A-size", "late-1g"}, {"migpro", "next-7g"}, {"migpro/A-largest", "next-7g"}, {"first-fit", "next-7g"}} {
		r := simRun(t, jobs, oneGPU, policy(t, c.policy))
		started := map[string]float64{}
		for _, run := range r.Runs {
			started[run.Job] = run.Started
		}
		other := "late-1g"
		if c.first == other {
			other = "next-7g"
		}
		if started[c.first] != 100 || started[other] <= 100 {
			t.Errorf("%s started next-7g at %v and late-1g at %v; want %s first, at 100", c.policy, started["next-7g"], started["late-1g"], c.first)
		}
	}
}
