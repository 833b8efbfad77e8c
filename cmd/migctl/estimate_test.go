package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/migpro/migpro/estimator"
)

func TestEstimateCommand(t *testing.T) {
	hist := filepath.Join(t.TempDir(), "h.json")
	h, err := estimator.OpenHistory(hist)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Record("ns/app", 25<<30, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--gpu", "h100-80gb", "--memory", "7Gi"}, 0, "7.0 GiB declared + 0.5 GiB context → 1g.10gb on H100-80GB\n"},
		{[]string{"--gpu", "a100-40gb", "--params", "7B", "--batch", "1", "--seq", "4096", "--layers", "32", "--hidden", "4096"}, 0,
			"15.0 GiB formula + 10% margin + 0.5 GiB context → 3g.20gb on A100-40GB\n"},
		{[]string{"--gpu", "h100-80gb", "--memory", "7Gi", "--history", hist, "--key", "ns/app"}, 0,
			"25.0 GiB history peak (over 7.0 GiB declared) + 10% margin + 0.5 GiB context → 3g.40gb on H100-80GB\n"},
		{[]string{"--gpu", "a30-24gb", "--memory", "30Gi"}, 1, "more than the largest profile 4g.24gb"},
		{[]string{"--gpu", "h100-80gb", "--memory", "7XB"}, 2, `--memory: "7XB": want bytes or a size`},
		{[]string{"--memory", "7Gi"}, 2, "--gpu is required"},
		{[]string{"--gpu", "v100"}, 2, `unknown GPU model "v100"`},
		{[]string{"--gpu", "h100-80gb"}, 2, "no memory hint"},
		{[]string{"--gpu", "h100-80gb", "--params", "lots"}, 2, "--params"},
		{[]string{"--gpu", "h100-80gb", "--params", "7B", "--dtype", "fp128"}, 2, "--dtype"},
		{[]string{"--gpu", "h100-80gb", "--history", hist}, 2, "--history needs --key"},
	} {
		var out, errb bytes.Buffer
		code := runMain(append([]string{"estimate"}, tc.args...), &out, &errb)
		got := out.String() + errb.String()
		if code != tc.code || !strings.Contains(got, tc.want) {
			t.Errorf("%v: exit %d, output %q; want exit %d and %q", tc.args, code, got, tc.code, tc.want)
		}
	}
	var out, errb bytes.Buffer
	if code := runMain([]string{"estimate", "--gpu", "h100-80gb", "--memory", "7Gi", "--output", "json"}, &out, &errb); code != 0 {
		t.Fatalf("json: exit %d %s", code, errb.String())
	}
	var j estimateJSON
	if err := json.Unmarshal(out.Bytes(), &j); err != nil || j.Profile != "1g.10gb" || !j.Fits || j.NeedBytes != 7<<30 || j.TotalBytes != 7<<30+512<<20 {
		t.Errorf("json %+v %v", j, err)
	}
	if _, err := os.Stat(hist); err != nil {
		t.Error(err)
	}
}
