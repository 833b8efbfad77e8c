package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const traceDir = "../../predictor/testdata"

var growing = map[string]float64{ // trace → OOM t, from the generator
	"qwen2-linear": 94, "llama3-linear": 72, "step-growth": 96, "warmup-then-growth": 91, "late-growth": 111,
}

// predictJSON runs migctl predict through runMain and decodes its JSON.
func predictJSON(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	var out, errb bytes.Buffer
	code := runMain(append([]string{"predict", "--output", "json"}, args...), &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rs []map[string]any
	if err := json.Unmarshal(out.Bytes(), &rs); err != nil {
		t.Fatalf("%v in %s", err, out.String())
	}
	return rs
}

func TestPredictJSONShape(t *testing.T) {
	rs := predictJSON(t, "--capacity", "10737418240", "--gpu", "h100-80gb", traceDir)
	if len(rs) != 10 {
		t.Fatalf("%d results, want one per checked-in trace", len(rs))
	}
	keys := []string{"trace", "mark", "oom", "leadSamples", "leadPct", "peakErrorAt10pct", "falseMark", "profile"}
	for _, r := range rs {
		if len(r) != len(keys) {
			t.Errorf("%v: %d keys, want exactly %v", r["trace"], len(r), keys)
		}
		for _, k := range keys {
			if _, ok := r[k]; !ok {
				t.Errorf("%v: key %q missing", r["trace"], k)
			}
		}
		name := r["trace"].(string)
		if oom, ok := growing[name]; ok {
			if r["oom"] != oom {
				t.Errorf("%s: oom %v, want %v", name, r["oom"], oom)
			}
		} else if r["oom"] != nil || r["mark"] != nil || r["profile"] != nil {
			t.Errorf("%s: oom %v mark %v profile %v, want null", name, r["oom"], r["mark"], r["profile"])
		}
	}
}

// byTrace scores every checked-in trace with one algorithm.
func byTrace(t *testing.T, alg string, extra ...string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	args := append([]string{"--capacity", "10Gi", "--algorithm", alg}, extra...)
	for _, r := range predictJSON(t, append(args, traceDir)...) {
		out[r["trace"].(string)] = r
	}
	return out
}

func TestPredictMigproVersusBaseline(t *testing.T) {
	for _, horizon := range [][]string{nil, {"--horizon", "120"}} {
		base, mig := byTrace(t, "baseline", horizon...), byTrace(t, "migpro", horizon...)
		for name := range growing {
			lead, ok := mig[name]["leadSamples"].(float64)
			if !ok || lead < 20 {
				t.Errorf("%v migpro %s: lead %v, want at least 20 samples before the OOM", horizon, name, mig[name]["leadSamples"])
			}
		}
		// The baseline stops at convergence, so growth that starts or steps
		// up later is never marked; migpro keeps watching.
		for _, name := range []string{"late-growth", "step-growth"} {
			if base[name]["mark"] != nil {
				t.Errorf("%v baseline %s: marked at %v; the control no longer shows the weakness", horizon, name, base[name]["mark"])
			}
		}
		falseBase := 0
		for name, r := range mig {
			if _, g := growing[name]; g {
				continue
			}
			if r["falseMark"] != false {
				t.Errorf("%v migpro: false mark on %s", horizon, name)
			}
			if base[name]["falseMark"] == true {
				falseBase++
			}
		}
		if falseBase == 0 {
			t.Errorf("%v: baseline made no false marks; the non-growing traces test nothing", horizon)
		}
	}
}

func TestPredictPeakErrorAtTenPercent(t *testing.T) {
	mig := byTrace(t, "migpro")
	for _, name := range []string{"qwen2-linear", "llama3-linear"} {
		e, ok := mig[name]["peakErrorAt10pct"].(float64)
		// On clean linear growth the forecast's peak is within 15%.
		if !ok || e > 15 {
			t.Errorf("%s: peak error at 10%% = %v, want under 15%%", name, mig[name]["peakErrorAt10pct"])
		}
	}
	if e := mig["flat"]["peakErrorAt10pct"].(float64); e > 5 {
		t.Errorf("flat: peak error %v%%, want under 5%%", e)
	}
}

func TestPredictTextAndBoth(t *testing.T) {
	var out, errb bytes.Buffer
	// Flags after the positional argument, GiB spelling.
	code := runMain([]string{"predict", traceDir + "/qwen2-linear.csv", traceDir + "/flat.csv", "--capacity", "10GiB", "--algorithm", "both"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	s := out.String()
	for _, want := range []string{"capacity 10.0 GiB", "baseline\nTRACE", "migpro\nTRACE", "qwen2-linear", "SUMMARY", "false marks"} {
		if !strings.Contains(s, want) {
			t.Errorf("text output lacks %q:\n%s", want, s)
		}
	}
	rs := predictJSON(t, "--capacity", "10Gi", "--algorithm", "both", traceDir+"/flat.csv")
	if len(rs) != 2 || rs[0]["algorithm"] != "baseline" || rs[1]["algorithm"] != "migpro" {
		t.Errorf("both: %v", rs)
	}
}

func TestPredictBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("t,used_bytes\n1,100\n2,lots\n"), 0o644)
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{traceDir}, "--capacity is required"},
		{[]string{"--capacity", "ten", traceDir}, `--capacity: "ten"`},
		{[]string{"--capacity", "10Gi"}, "no trace files"},
		{[]string{"--capacity", "10Gi", filepath.Join(dir, "missing.csv")}, "missing.csv: no such file"},
		{[]string{"--capacity", "10Gi", bad}, `bad.csv:3: used_bytes "lots"`},
		{[]string{"--capacity", "10Gi", empty}, "no *.csv traces"},
		{[]string{"--capacity", "10Gi", "--gpu", "v100", traceDir}, `unknown GPU model "v100"`},
		{[]string{"--capacity", "10Gi", "--algorithm", "magic", traceDir}, `--algorithm "magic"`},
		{[]string{"--capacity", "10Gi", "--output", "xml", traceDir}, `--output "xml"`},
		{[]string{"--capacity", "10Gi", "--horizon", "-3", traceDir}, "--horizon -3"},
		{[]string{"--capacity", "10Gi", "--bogus", traceDir}, "bogus"},
	} {
		var out, errb bytes.Buffer
		code := runMain(append([]string{"predict"}, tc.args...), &out, &errb)
		msg := errb.String()
		if code != 2 || !strings.Contains(msg, tc.want) || !strings.HasPrefix(msg, "migctl predict: ") || out.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 and %q", tc.args, code, msg, out.String(), tc.want)
		}
		if strings.Contains(strings.TrimSpace(msg), "\n") {
			t.Errorf("%v: message spans lines: %q", tc.args, msg)
		}
	}
}
