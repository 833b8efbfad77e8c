package hook

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestParseState(t *testing.T) {
	st, err := ParseState(strings.NewReader(`{"ociVersion":"1.0.2","id":"abc","status":"creating","pid":42,"bundle":"/b","annotations":{"k":"v"}}`))
	if err != nil || st.ID != "abc" || st.Pid != 42 || st.Bundle != "/b" || st.Annotations["k"] != "v" || st.Status != specs.StateCreating {
		t.Fatalf("ParseState = %+v, %v", st, err)
	}
	for name, in := range map[string]string{
		"empty":        "",
		"not json":     "{",
		"no id":        `{"bundle":"/b","pid":1}`,
		"relative":     `{"id":"a","bundle":"b","pid":1}`,
		"no bundle":    `{"id":"a","pid":1}`,
		"negative pid": `{"id":"a","bundle":"/b","pid":-1}`,
		"huge":         `{"id":"` + strings.Repeat("a", MaxStateBytes) + `"}`,
	} {
		if _, err := ParseState(strings.NewReader(in)); !errors.Is(err, ErrBadInput) {
			t.Errorf("%s: err = %v, want ErrBadInput", name, err)
		}
	}
}

func writeBundle(t *testing.T, config string) string {
	t.Helper()
	dir := t.TempDir()
	if config != "" {
		if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadBundle(t *testing.T) {
	dir := writeBundle(t, `{"root":{"path":"rootfs"},"process":{"env":["A=1"]}}`)
	b, err := LoadBundle(dir)
	if err != nil || b.Rootfs != filepath.Join(dir, "rootfs") {
		t.Fatalf("LoadBundle = %+v, %v", b, err)
	}
	abs := writeBundle(t, `{"root":{"path":"/abs/root"}}`)
	if b, err := LoadBundle(abs); err != nil || b.Rootfs != "/abs/root" {
		t.Fatalf("absolute root: %+v, %v", b, err)
	}
	for name, dir := range map[string]string{
		"missing bundle": filepath.Join(t.TempDir(), "nope"),
		"no config":      writeBundle(t, ""),
		"bad json":       writeBundle(t, `{"root":`),
		"no root":        writeBundle(t, `{"process":{}}`),
	} {
		if _, err := LoadBundle(dir); !errors.Is(err, ErrBadInput) {
			t.Errorf("%s: err = %v, want ErrBadInput", name, err)
		}
	}
}

func TestIdentify(t *testing.T) {
	st := specs.State{ID: "c1", Pid: 9, Annotations: map[string]string{
		AnnotationPodNamespace: "ns", AnnotationPodName: "pod", AnnotationPodUID: "uid-1", AnnotationContainerName: "main",
		AnnotationMIGUUIDs: "MIG-bbb, 0",
	}}
	b := Bundle{Spec: &specs.Spec{
		Process:     &specs.Process{Env: []string{"PATH=/bin", "NVIDIA_VISIBLE_DEVICES=MIG-aaa,1", "CUDA_VISIBLE_DEVICES=MIG-aaa", "OTHER=MIG-zzz"}},
		Annotations: map[string]string{AnnotationPodName: "overridden-by-state", AnnotationMIGUUIDs: "MIG-ccc"},
	}}
	r := Identify(st, b)
	if strings.Join(r.MIGUUIDs, ",") != "MIG-aaa,MIG-bbb" || r.PodName != "pod" || r.PodNamespace != "ns" || r.PodUID != "uid-1" || r.ContainerName != "main" || r.ID != "c1" || r.PID != 9 {
		t.Fatalf("Identify = %+v", r)
	}
	// podman: no CRI annotations, devices from env only.
	r = Identify(specs.State{ID: "p"}, Bundle{Spec: &specs.Spec{Process: &specs.Process{Env: []string{"NVIDIA_VISIBLE_DEVICES=all"}}}})
	if len(r.MIGUUIDs) != 0 || r.PodName != "" {
		t.Fatalf("no MIG: %+v", r)
	}
}

// FuzzHookInput drives the state and config parsers with arbitrary bytes:
// they must never panic, every failure must be ErrBadInput, and whatever
// Identify makes of accepted input must only carry MIG- entries.
func FuzzHookInput(f *testing.F) {
	f.Add([]byte(`{"id":"a","pid":1,"bundle":"/b","annotations":{"migpro.dev/mig-uuids":"MIG-1"}}`),
		[]byte(`{"root":{"path":"rootfs"},"process":{"env":["NVIDIA_VISIBLE_DEVICES=MIG-2"]}}`))
	f.Add([]byte(`{"id":1}`), []byte(`{"root":null}`))
	f.Add([]byte(`null`), []byte(`[]`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, state, config []byte) {
		st, err := ParseState(strings.NewReader(string(state)))
		if err != nil {
			if !errors.Is(err, ErrBadInput) {
				t.Fatalf("ParseState error %v is not ErrBadInput", err)
			}
			return
		}
		if err := os.WriteFile(filepath.Join(dir, "config.json"), config, 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := LoadBundle(dir)
		if err != nil {
			if !errors.Is(err, ErrBadInput) {
				t.Fatalf("LoadBundle error %v is not ErrBadInput", err)
			}
			return
		}
		if !filepath.IsAbs(b.Rootfs) {
			t.Fatalf("rootfs %q not absolute", b.Rootfs)
		}
		for _, u := range Identify(st, b).MIGUUIDs {
			if !strings.HasPrefix(u, "MIG-") || strings.ContainsAny(u, ", ") {
				t.Fatalf("Identify produced %q", u)
			}
		}
	})
}
