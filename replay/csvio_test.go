package replay

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

func TestCSVRoundTrip(t *testing.T) {
	for _, name := range []string{"mixed", "llm", "pcie"} {
		jobs := mix(t, name, 40, 9)
		jobs[0].Profile = "3g.20gb"
		var buf bytes.Buffer
		if err := WriteCSV(&buf, jobs); err != nil {
			t.Fatal(err)
		}
		back, err := ReadCSV(&buf)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(jobs, back) {
			t.Errorf("%s: jobs changed through CSV:\n%+v\n%+v", name, jobs[:2], back[:2])
		}
	}
}

func TestCSVDefaults(t *testing.T) {
	in := "# two jobs\nid,arrival_s,full_runtime_s,peak_gib\nj1,0,100,3\nj2,5.5,200,12\n"
	jobs, err := ReadCSV(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := Job{ID: "j2", Arrival: 5.5, FullRuntime: 200, Scaling: 1, Mem: Memory{Start: 12 * GiB, Peak: 12 * GiB, GrowTo: 1},
		Declared: 12 * GiB, Key: "j2", Iters: 100}
	if len(jobs) != 2 || !reflect.DeepEqual(jobs[1], want) {
		t.Errorf("got %+v\nwant %+v", jobs, want)
	}
}

func TestCSVErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "empty file"},
		{"id,arrival_s,full_runtime_s\n", `missing required column "peak_gib"`},
		{"id,arrival_s,full_runtime_s,peak_gib,colour\n", `unknown column "colour"`},
		{"id,arrival_s,full_runtime_s,peak_gib\n", "no jobs"},
		{"id,arrival_s,full_runtime_s,peak_gib\na,0,100,3\nb,x,100,3\n", `line 3: arrival_s "x" is not a finite number`},
		{"id,arrival_s,full_runtime_s,peak_gib\na,0,100,\n", "line 2: peak_gib is empty"},
		{"id,arrival_s,full_runtime_s,peak_gib,iters\na,0,100,3,2.5\n", "iters 2.5"},
		{"id,id,arrival_s,full_runtime_s,peak_gib\n", `column "id" appears twice`},
	} {
		_, err := ReadCSV(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.want)
		}
	}
}

func TestGenerateIsSeeded(t *testing.T) {
	m := model(t)
	for _, info := range Mixes() {
		spec := MixSpec{Name: info.Name, Jobs: 50, Seed: 11, GPUs: 16}
		a, err := Generate(spec, m)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Generate(spec, m)
		spec.Seed = 12
		c, _ := Generate(spec, m)
		if !reflect.DeepEqual(a, b) || reflect.DeepEqual(a, c) {
			t.Errorf("%s: same seed equal %v, other seed equal %v", info.Name, reflect.DeepEqual(a, b), reflect.DeepEqual(a, c))
		}
		if err := ValidateAll(a, m.Largest()); err != nil {
			t.Errorf("%s: generated an invalid job: %v", info.Name, err)
		}
	}
	if _, err := Generate(MixSpec{Name: "nope"}, m); err == nil {
		t.Errorf("unknown mix accepted")
	}
}

func TestStreamArrivalsMatchLoad(t *testing.T) {
	m := model(t)
	jobs, err := Generate(MixSpec{Name: "stream", Jobs: 4000, Seed: 1, Load: 0.5, GPUs: 10}, m)
	if err != nil {
		t.Fatal(err)
	}
	work := 0.0
	for i := range jobs {
		work += m.MinSliceSeconds(&jobs[i])
	}
	offered := work / jobs[len(jobs)-1].Arrival / float64(m.Slices*10)
	if offered < 0.45 || offered > 0.55 {
		t.Errorf("offered load %.3f, want about 0.5", offered)
	}
}
