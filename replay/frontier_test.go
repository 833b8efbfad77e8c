package replay

import "testing"

// A limit of the sweep is the agent's --reserve-after: at 2m it is the
// policy migpro+reserve-after itself, and "never" is migpro; the trials are
// marked simulator only, and the agent's settings are not.
func TestFrontierPointsAreTheAgentsRule(t *testing.T) {
	pts, err := ParseFrontierPoints("0, 2m,30s,4x,2m+large,1m+anynode,10m+near")
	if err != nil {
		t.Fatal(err)
	}
	agent, err := ParsePolicies("migpro,migpro+reserve-after")
	if err != nil {
		t.Fatal(err)
	}
	if pts[0].Label != "never" || pts[0].Strategy != agent[0] {
		t.Errorf("point 0: %q %+v, want never as %+v", pts[0].Label, pts[0].Strategy, agent[0])
	}
	if pts[1].Label != "2m" || pts[1].Strategy != agent[1] {
		t.Errorf("point 2m: %q %+v, want %+v", pts[1].Label, pts[1].Strategy, agent[1])
	}
	if pts[2].Strategy.ReserveAfter != 30 {
		t.Errorf("30s: ReserveAfter %v", pts[2].Strategy.ReserveAfter)
	}
	for i, p := range pts {
		if want := i >= 3; p.SimulatorOnly() != want {
			t.Errorf("%s: simulator only %v, want %v", p.Label, p.SimulatorOnly(), want)
		}
	}
	if s := pts[3].Strategy; s.ReserveRunFactor != 4 || s.ReserveAfter != 0 {
		t.Errorf("4x: %+v", s)
	}
	if s := pts[4].Strategy; !s.ReserveLarge || s.ReserveAfter != 120 || s.ReserveAnyNode {
		t.Errorf("2m+large: %+v", s)
	}
	if s := pts[5].Strategy; !s.ReserveAnyNode || s.ReserveLarge {
		t.Errorf("1m+anynode: %+v", s)
	}
	if s := pts[6].Strategy; !s.ReserveNearEmpty || s.ReserveAfter != 600 {
		t.Errorf("10m+near: %+v", s)
	}
}

// The pooled ratio is the geometric mean over the rows kept, and the rows
// met count only rows with a target row.
func TestFrontierPooledIsTheGeometricMean(t *testing.T) {
	p := FrontierPoint{Rows: []FrontierRow{
		{Config: "online/a100-40gb/4gpu/load0.8", Node: "a100-40gb", GPUs: 4, JCT: 2, P95: map[string]float64{"7g": 0.5}},
		{Config: "online/a100-40gb/1gpu/load0.8", Node: "a100-40gb", GPUs: 1, JCT: 0.5, P95: map[string]float64{"7g": 2, "4g": 1}},
		{Config: "online/a100-40gb:2,h100-80gb:1/3gpu/load0.8", Node: "a100-40gb:2,h100-80gb:1", GPUs: 3, JCT: 8},
	}}
	all := p.Pooled()
	if all.JCT < 1.999 || all.JCT > 2.001 || all.P95["7g"] != 1 || all.P95["4g"] != 1 || all.Rows != 3 {
		t.Errorf("pooled %+v, want JCT 2 (geometric mean of 2, 0.5, 8), 7g 1, 4g 1 over 3 rows", all)
	}
	bar := p.PooledOver(FrontierRow.StaticBar)
	if bar.Rows != 1 || bar.JCT != 2 || bar.P95["7g"] != 0.5 {
		t.Errorf("pooled where static sets the bar %+v, want the 4-GPU row alone", bar)
	}
}

// replayPoints replays the points of list on one stream of four busy
// A100s (600 online jobs at load 0.9, seed 2).
func replayPoints(t *testing.T, list string) ([]FrontierPoint, []*Result) {
	t.Helper()
	m, err := LoadModel("a100-40gb")
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := Generate(MixSpec{Name: "online", Jobs: 600, Seed: 2, Load: 0.9, GPUs: 4}, m)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := ParseFrontierPoints(list)
	if err != nil {
		t.Fatal(err)
	}
	var res []*Result
	for _, p := range pts {
		r, err := Run(jobs, Config{Model: "a100-40gb", Nodes: 1, GPUsPerNode: 4, Seed: 2}, p.Strategy)
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, r)
	}
	return pts, res
}

// The +near trial acts: on four busy A100s it reserves, and less often
// than the rule at the same limit (only while a GPU is at most half in
// use).
func TestFrontierTrialsAct(t *testing.T) {
	_, res := replayPoints(t, "2m,2m+near")
	if n := []int{res[0].Reservations, res[1].Reservations}; n[1] == 0 || n[1] >= n[0] {
		t.Errorf("reservations: %d at 2m, %d at 2m+near; want some, and fewer with +near", n[0], n[1])
	}
}

// The +oracle trial acts: on four busy A100s it reserves, and the GPU it
// drains (the one whose runs end first, which only the replay knows)
// changes the run from the agent's rule at the same limit.
func TestFrontierOracleTrialActs(t *testing.T) {
	pts, res := replayPoints(t, "2m,2m+oracle")
	if !pts[1].Strategy.ReserveOracle || pts[0].Strategy.ReserveOracle {
		t.Fatalf("points %+v: want the oracle trial on the second only", pts)
	}
	if res[1].Reservations == 0 {
		t.Errorf("2m+oracle made no reservation")
	}
	if res[0].MeanJCT == res[1].MeanJCT {
		t.Errorf("2m and 2m+oracle have the same mean JCT %.1f: the oracle's choice of GPU changed nothing", res[0].MeanJCT)
	}
}
