package simgpu

import (
	"fmt"
	"strings"
	"testing"

	"github.com/migpro/migpro/gpu"
)

func TestModelProfileNames(t *testing.T) {
	want := map[string][]string{
		"a30-24gb":   {"1g.6gb", "1g.6gb+me", "2g.12gb", "2g.12gb+me", "4g.24gb"},
		"a100-40gb":  {"1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"},
		"a100-80gb":  {"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"},
		"h100-80gb":  {"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"},
		"h200-141gb": {"1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"},
	}
	if got := strings.Join(Models(), ","); got != "a30-24gb,a100-40gb,a100-80gb,h100-80gb,h200-141gb" {
		t.Fatalf("Models() = %s", got)
	}
	for _, m := range Models() {
		ps, err := ModelProfiles(m)
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		var names []string
		for _, p := range ps {
			names = append(names, p.Name)
		}
		if strings.Join(names, ",") != strings.Join(want[m], ",") {
			t.Errorf("%s profiles = %v, want %v", m, names, want[m])
		}
	}
}

// placementsByName renders a profile's placements as "start:size,..." so a
// table can state the rules of docs/design.md literally.
func placementsByName(ps []gpu.Profile) map[string]string {
	out := map[string]string{}
	for _, p := range ps {
		var s []string
		for _, pl := range p.Placements {
			s = append(s, pl.String())
		}
		out[p.Name] = fmt.Sprintf("%s x%d", strings.Join(s, ","), p.MaxCount)
	}
	return out
}

func TestModelPlacementsMatchDriver(t *testing.T) {
	eightSlot := func(one, oneDouble string) map[string]string {
		return map[string]string{
			one:         "0:1,1:1,2:1,3:1,4:1,5:1,6:1 x7",
			one + "+me": "0:1,1:1,2:1,3:1,4:1,5:1,6:1 x1",
			oneDouble:   "0:2,2:2,4:2,6:2 x4",
		}
	}
	cases := []struct {
		model string
		want  map[string]string
	}{
		{"a30-24gb", map[string]string{
			"1g.6gb": "0:1,1:1,2:1,3:1 x4", "1g.6gb+me": "0:1,1:1,2:1,3:1 x1",
			"2g.12gb": "0:2,2:2 x2", "2g.12gb+me": "0:2,2:2 x1", "4g.24gb": "0:4 x1",
		}},
		{"a100-40gb", merge(eightSlot("1g.5gb", "1g.10gb"), map[string]string{
			"2g.10gb": "0:2,2:2,4:2 x3", "3g.20gb": "0:4,4:4 x2", "4g.20gb": "0:4 x1", "7g.40gb": "0:8 x1"})},
		{"a100-80gb", merge(eightSlot("1g.10gb", "1g.20gb"), map[string]string{
			"2g.20gb": "0:2,2:2,4:2 x3", "3g.40gb": "0:4,4:4 x2", "4g.40gb": "0:4 x1", "7g.80gb": "0:8 x1"})},
		{"h100-80gb", merge(eightSlot("1g.10gb", "1g.20gb"), map[string]string{
			"2g.20gb": "0:2,2:2,4:2 x3", "3g.40gb": "0:4,4:4 x2", "4g.40gb": "0:4 x1", "7g.80gb": "0:8 x1"})},
		{"h200-141gb", merge(eightSlot("1g.18gb", "1g.35gb"), map[string]string{
			"2g.35gb": "0:2,2:2,4:2 x3", "3g.71gb": "0:4,4:4 x2", "4g.71gb": "0:4 x1", "7g.141gb": "0:8 x1"})},
	}
	for _, c := range cases {
		ps, err := ModelProfiles(c.model)
		if err != nil {
			t.Fatal(err)
		}
		got := placementsByName(ps)
		if len(got) != len(c.want) {
			t.Errorf("%s: %d profiles, want %d: %v", c.model, len(got), len(c.want), got)
		}
		for name, w := range c.want {
			if got[name] != w {
				t.Errorf("%s %s: placements %q, want %q", c.model, name, got[name], w)
			}
		}
	}
}

func merge(a, b map[string]string) map[string]string {
	for k, v := range b {
		a[k] = v
	}
	return a
}

func TestParseSpec(t *testing.T) {
	cases := []struct {
		in      string
		want    string
		wantErr string
	}{
		{in: "a100-40gb:2,h100-80gb:1", want: "a100-40gb:2 h100-80gb:1"},
		{in: "a30-24gb", want: "a30-24gb:1"},
		{in: " A100-80GB : 3 , h200-141gb", want: "a100-80gb:3 h200-141gb:1"},
		{in: "", wantErr: "empty GPU spec"},
		{in: "v100:1", wantErr: "unknown GPU model \"v100\" (known: a30-24gb, a100-40gb, a100-80gb, h100-80gb, h200-141gb)"},
		{in: "a100-40gb:0", wantErr: "bad count \"0\""},
		{in: "a100-40gb:x", wantErr: "bad count \"x\""},
		{in: "a100-40gb:-1", wantErr: "bad count \"-1\""},
		{in: "a100-40gb:2,", wantErr: "empty model"},
		{in: "a100-40gb:65", wantErr: "more than the limit"},
	}
	for _, c := range cases {
		got, err := ParseSpec(c.in)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("ParseSpec(%q) error = %v, want containing %q", c.in, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseSpec(%q): %v", c.in, err)
			continue
		}
		var parts []string
		for _, mc := range got {
			parts = append(parts, fmt.Sprintf("%s:%d", mc.Model, mc.Count))
		}
		if s := strings.Join(parts, " "); s != c.want {
			t.Errorf("ParseSpec(%q) = %s, want %s", c.in, s, c.want)
		}
	}
}

func TestModelProfilesUnknown(t *testing.T) {
	if _, err := ModelProfiles("b200"); err == nil || !strings.Contains(err.Error(), "known: a30-24gb") {
		t.Fatalf("ModelProfiles(b200) error = %v, want unknown-model error listing known models", err)
	}
}
