package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/migpro/migpro/internal/ctl/ctltest"
)

// update rewrites the golden files: go test ./cmd/migctl -run Golden -update.
var update = flag.Bool("update", false, "rewrite testdata/golden from the current output")

// unstable are the values that change from run to run (wall-clock time,
// the random lease of an alloc), blanked before comparing.
var unstable = regexp.MustCompile(`("(?:wallSeconds|lastSample|lease)":\s*)("[^"]*"|[0-9.e+-]+)`)

// TestGoldenJSON runs each command that prints JSON through migctl's entry
// point and compares its stdout with testdata/golden, byte for byte. The
// files were recorded before the commands moved to cobra-native flags; the
// refactor must leave them unchanged.
func TestGoldenJSON(t *testing.T) {
	sock := ctltest.Agent(t, "golden.migpro.dev/mig", 3)
	topSock := topAgent(t)
	steps := []struct {
		name string
		args []string
	}{
		{"plan", []string{"plan", "--simulate", "a100-40gb:2,h100-80gb:1", "--seed", "5", "--output", "json", "1g.5gb", "3g.20gb", "free:1", "4g.20gb", "1g.10gb@1:6"}},
		{"predict", []string{"predict", "--capacity", "10737418240", "--gpu", "h100-80gb", "--algorithm", "both", "--output", "json", traceDir}},
		{"estimate", []string{"estimate", "--gpu", "a100-40gb", "--params", "7e9", "--dtype", "fp16", "--output", "json"}},
		{"alloc", []string{"alloc", "--socket", sock, "--owner", "golden", "--output", "json", "2g.10gb"}},
		{"status", []string{"status", "--socket", sock, "--output", "json"}},
		{"free", []string{"free", "--socket", sock, "golden.migpro.dev/mig=" + "PLACEHOLDER"}},
		{"status-after-free", []string{"status", "--socket", sock, "--output", "json"}},
		{"top", []string{"top", "--socket", topSock, "--output", "json"}},
	}
	var allocated string
	for _, s := range steps {
		args := s.args
		if s.name == "free" {
			args = append(args[:len(args)-1:len(args)-1], allocated)
		}
		var out, errb bytes.Buffer
		if code := runMain(args, &out, &errb); code != 0 {
			t.Fatalf("migctl %q: exit %d: %s", args, code, errb.String())
		}
		got := unstable.ReplaceAll(out.Bytes(), []byte(`${1}0`))
		if s.name == "alloc" {
			m := regexp.MustCompile(`"cdiName":\s*"([^"]+)"`).FindSubmatch(got)
			if m == nil {
				t.Fatalf("alloc printed no cdiName: %s", got)
			}
			allocated = string(m[1])
		}
		path := filepath.Join("testdata", "golden", s.name+".json")
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (record with -update)", s.name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("migctl %s: output differs from %s\ngot:\n%s\nwant:\n%s", s.name, path, got, want)
		}
	}
}
