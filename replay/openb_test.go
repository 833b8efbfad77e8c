package replay

import (
	"strings"
	"testing"
)

// openbLines are a few pods written in the OpenB pod-list format: a
// CPU-only pod, sharing pods of 0.25, 0.46 and 0.5 of a GPU, a whole-GPU pod
// and a two-GPU pod.
const openbLines = `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
pod-cpu,4000,8192,0,0,,LS,Running,0,500,0
pod-a,6000,12288,1,250,,LS,Running,100,1100,100
pod-b,6000,12288,1,460,,BE,Succeeded,200,2200,300
pod-c,6000,12288,1,500,,LS,Running,300,900,300
pod-d,8000,16384,1,1000,,LS,Running,400,4400,400
pod-e,16000,32768,2,1000,V100M32,LS,Running,500,1500,500
`

func TestOpenBReaderMapsSharesToProfiles(t *testing.T) {
	m := model(t)
	jobs, what, err := ReadJobs(strings.NewReader(openbLines), m, MixSpec{})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id, profile string
		arrival     float64
		run         float64
	}{
		{"pod-a", "2g.10gb", 0, 1000},   // 250 of 1000 of 7 slices: 1.75 → 2
		{"pod-b", "4g.20gb", 100, 1900}, // 460: 3.22 → 4; runs from its scheduling
		{"pod-c", "4g.20gb", 200, 600},  // 500: 3.5 → 4
		{"pod-d", "7g.40gb", 300, 4000},
		{"pod-e/0", "7g.40gb", 400, 1000},
		{"pod-e/1", "7g.40gb", 400, 1000},
	}
	if len(jobs) != len(want) {
		t.Fatalf("%d jobs (%s), want %d", len(jobs), what, len(want))
	}
	for i, w := range want {
		j := jobs[i]
		if j.ID != w.id || j.Profile != w.profile || j.Arrival != w.arrival || j.FullRuntime != w.run {
			t.Errorf("job %d: %s %s at %v for %v s, want %s %s at %v for %v s", i, j.ID, j.Profile, j.Arrival, j.FullRuntime, w.id, w.profile, w.arrival, w.run)
		}
	}
	if !strings.Contains(what, "OpenB") {
		t.Errorf("description %q does not say OpenB", what)
	}
}

func TestOpenBWindowAndLoad(t *testing.T) {
	m := model(t)
	a, _, err := ReadJobs(strings.NewReader(openbLines), m, MixSpec{Jobs: 2, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := ReadJobs(strings.NewReader(openbLines), m, MixSpec{Jobs: 2, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(a) < 2 || len(a) != len(b) || a[0].ID != b[0].ID || a[0].Arrival != 0 {
		t.Fatalf("window of 2 pods: %v then %v; want the same window twice, from time 0", a, b)
	}
	// Load 1 on one GPU: the work offered equals what its slices serve over
	// the span of arrivals.
	c, _, err := ReadJobs(strings.NewReader(openbLines), m, MixSpec{Load: 1, GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	work := 0.0
	for i := range c {
		work += m.MinSliceSeconds(&c[i])
	}
	span := c[len(c)-1].Arrival
	if got := work / (span * float64(m.Slices)); got < 0.99 || got > 1.01 {
		t.Errorf("offered load %.3f after scaling to 1", got)
	}
	if _, _, err := ReadJobs(strings.NewReader(strings.Replace(openbLines, "250", "x", 1)), m, MixSpec{}); err == nil {
		t.Error("a bad gpu_milli was accepted")
	}
}

// TestOpenBReplaysUnderEveryBaseline replays the pods under the baselines
// and the agent's policy, with the engine's invariants checked.
func TestOpenBReplaysUnderEveryBaseline(t *testing.T) {
	m := model(t)
	jobs, _, err := ReadJobs(strings.NewReader(openbLines), m, MixSpec{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"first-fit", "nvidia-dra", "hami", "static", "migpro"} {
		r := simRun(t, jobs, Config{Nodes: 1, GPUsPerNode: 2, Check: true}, policy(t, name))
		if len(r.Completions) != len(jobs) {
			t.Errorf("%s: %d completions", name, len(r.Completions))
		}
		if name == "nvidia-dra" || name == "hami" {
			if r.Reconfigs != 2*len(r.Runs) {
				t.Errorf("%s: %d NVML steps for %d runs, want a create and a destroy each", name, r.Reconfigs, len(r.Runs))
			}
		}
	}
}
