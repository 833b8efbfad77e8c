package readmit

import (
	"context"
	"testing"
)

// A rule decays after DecayRuns consecutive runs whose peak fits its From;
// a run that does not fit starts the count again.
func TestRecommendationDecaysWhenPeaksFitAgain(t *testing.T) {
	cs, _ := newMarker(t)
	s := Store{Client: cs}
	ctx := context.Background()
	if _, err := s.Record(ctx, ns, testCtrl, Rule{Container: "main", From: res1g, To: res2g}); err != nil {
		t.Fatal(err)
	}
	small := Run{Container: "main", PeakBytes: 3 * gib, FitsFrom: func(from string) bool { return from == res1g }}
	big := Run{Container: "main", PeakBytes: 7 * gib, FitsFrom: func(string) bool { return false }}
	other := Run{Container: "sidecar", PeakBytes: 1, FitsFrom: func(string) bool { return true }}
	for i, run := range []Run{small, small, big, other, small, small} {
		dropped, err := s.RecordRun(ctx, ns, testCtrl, run)
		if err != nil || len(dropped) != 0 {
			t.Fatalf("run %d: dropped %+v %v, want nothing yet", i, dropped, err)
		}
	}
	if rec := storedRecommendation(t, cs); rec == nil || len(rec.Rules) != 1 || rec.Rules[0].FitRuns != 2 {
		t.Fatalf("after 2 fitting runs since the big one: %+v", rec)
	}
	dropped, err := s.RecordRun(ctx, ns, testCtrl, small)
	if err != nil || len(dropped) != 1 || dropped[0].To != res2g {
		t.Fatalf("third fitting run: dropped %+v %v", dropped, err)
	}
	rec := storedRecommendation(t, cs)
	if to, ok := rec.Target("main", res1g); ok {
		t.Fatalf("the rule still applies (%s) after decaying", to)
	}
}
