package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// --output json lists each fragmentation wait with the instances in the
// way: first-fit puts a 3g.20gb at slot 0, a 2g.10gb at 4 and a 1g.5gb at
// 6 on one A100, and the next 1g.5gb finds a free slice and slot 7 but no
// legal placement.
func TestReplayJSONListsFragmentationWaits(t *testing.T) {
	csv := "id,arrival_s,full_runtime_s,peak_gib,profile\n" +
		"big,0,1000,2,3g.20gb\nmid,1,1000,2,2g.10gb\nsmall,2,1000,2,1g.5gb\nlate,3,1000,2,1g.5gb\n"
	path := filepath.Join(t.TempDir(), "jobs.csv")
	if err := os.WriteFile(path, []byte(csv), 0o600); err != nil {
		t.Fatal(err)
	}
	rows := replayRows(t, "--csv", path, "--simulate", "a100-40gb:1", "--policies", "first-fit")
	if len(rows) != 1 {
		t.Fatalf("rows %+v", rows)
	}
	w := rows[0].Fragmented
	if len(w) != 1 || w[0].Job != "late" || len(w[0].GPUs) != 1 ||
		!slices.Equal(w[0].GPUs[0].Instances, []string{"1g.5gb@6", "2g.10gb@4", "3g.20gb@0"}) {
		t.Errorf("fragmentation waits %+v; want one, job late, GPU 0 holding 1g.5gb@6, 2g.10gb@4, 3g.20gb@0", w)
	}
}
