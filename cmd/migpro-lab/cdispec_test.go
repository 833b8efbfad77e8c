package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/migpro/migpro/doctor/cdispec"
	"github.com/migpro/migpro/gpu/simgpu/simdrivertest"
)

// migpro-lab cdi-spec on the simulated driver prints its libraries and the
// one instance's spec, as text and as JSON; a bad --output is bad usage.
func TestCDISpecSimulated(t *testing.T) {
	stubs, err := simdrivertest.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := runMain([]string{"cdi-spec", "--simulate", "a100-40gb", "--profile", "2g.10gb", "--sim-driver", stubs.Dir}, &out, &errb); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"driver 550.127.05", "libcuda.so.550.127.05", "nvidia-smi", "instance specs (1)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
	out.Reset()
	var r cdispec.Report
	if code := runMain([]string{"cdi-spec", "--simulate", "a100-40gb", "--sim-driver", stubs.Dir, "-o", "json"}, &out, &errb); code != 0 ||
		json.Unmarshal(out.Bytes(), &r) != nil || len(r.Instances) != 1 || len(r.Libraries) == 0 {
		t.Fatalf("json: exit %d %s", code, out.String())
	}
	errb.Reset()
	if code := runMain([]string{"cdi-spec", "--output", "yaml"}, &out, &errb); code != 2 || strings.Count(errb.String(), "\n") != 1 {
		t.Errorf("--output yaml: exit %d stderr %q; want 2 and one line", code, errb.String())
	}
}
