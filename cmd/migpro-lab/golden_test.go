package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// update rewrites the golden files: go test ./cmd/migpro-lab -run Golden -update.
var update = flag.Bool("update", false, "rewrite testdata/golden from the current output")

// wallSeconds is the one value that changes from run to run.
var wallSeconds = regexp.MustCompile(`("wallSeconds":\s*)([0-9.e+-]+)`)

// TestGoldenReplayJSON compares replay's JSON with the file recorded from
// migctl replay before the command moved to migpro-lab, byte for byte; the
// fields after fragmentationWaits (the metrics users feel and
// simulatorOnly) were added to it later, every earlier byte unchanged.
func TestGoldenReplayJSON(t *testing.T) {
	args := []string{"replay", "--mix", "mixed", "--jobs", "30", "--seed", "4", "--simulate", "a100-40gb:2,h100-80gb:1", "--policies", "migpro,first-fit", "--output", "json"}
	var out, errb bytes.Buffer
	if code := runMain(args, &out, &errb); code != 0 {
		t.Fatalf("migpro-lab %q: exit %d: %s", args, code, errb.String())
	}
	got := wallSeconds.ReplaceAll(out.Bytes(), []byte(`${1}0`))
	path := filepath.Join("testdata", "golden", "replay.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("replay output differs from %s\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}
