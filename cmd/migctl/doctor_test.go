package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/migpro/migpro/doctor"
)

func TestDoctorSimulatedPasses(t *testing.T) {
	stdout, stderr, code := migctl("doctor", "--simulate", "a100-40gb:2")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{"ok    driver", "ok    gpu 0", "ok    gpu 1", "MIG mode on, pending on"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("no %q in:\n%s", want, stdout)
		}
	}
	stdout, _, code = migctl("doctor", "--simulate", "h100-80gb", "--output", "json")
	var r doctor.Report
	if code != 0 || json.Unmarshal([]byte(stdout), &r) != nil || r.Simulated != "h100-80gb" || len(r.Checks) < 5 {
		t.Fatalf("json: exit %d %s", code, stdout)
	}
}

func TestDoctorWithoutNVMLFailsInOneLine(t *testing.T) {
	stdout, stderr, code := migctl("doctor", "--nvml-lib", "/nonexistent/libnvidia-ml.so.1")
	if code != doctor.ExitFailed || stderr != "" {
		t.Fatalf("exit %d stderr %q", code, stderr)
	}
	var nvmlLines []string
	for _, l := range strings.Split(stdout, "\n") {
		if strings.Contains(l, "nvml") || strings.Contains(l, "driver ") || strings.HasPrefix(l, "fail  gpu") {
			nvmlLines = append(nvmlLines, l)
		}
	}
	if len(nvmlLines) != 1 || !strings.HasPrefix(nvmlLines[0], "fail  nvml") || !strings.Contains(nvmlLines[0], "/nonexistent/libnvidia-ml.so.1 not found") {
		t.Fatalf("want one failing nvml line naming the library, got %q\n%s", nvmlLines, stdout)
	}
}

func TestDoctorBadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"doctor", "--output", "yaml"},
		{"doctor", "extra"},
		{"doctor", "--simulate", "z100"},
		{"doctor", "cdi-spec"}, // migpro-lab cdi-spec
	} {
		_, stderr, code := migctl(args...)
		if code != 2 || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d stderr %q", args, code, stderr)
		}
	}
}
