package cdi

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/migpro/migpro/internal/quietlog"
	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"
	specs "tags.cncf.io/container-device-interface/specs-go"
)

// TestReplaceIsAtomic rewrites one spec with alternating content while
// readers read it: every read must be a complete, valid spec of one of the
// two versions, and no temp file may remain.
func TestReplaceIsAtomic(t *testing.T) {
	d := newDriverWithInstance(t)
	dir := t.TempDir()
	wa, err := NewWriter(WithLogger(quietlog.New()), WithSpecDir(dir), WithExtraEdits(specs.ContainerEdits{Env: []string{"PHASE=a"}}))
	if err != nil {
		t.Fatal(err)
	}
	wb, err := NewWriter(WithLogger(quietlog.New()), WithSpecDir(dir), WithExtraEdits(specs.ContainerEdits{Env: []string{"PHASE=b"}}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wa.Write(testInstance, d.paths); err != nil {
		t.Fatal(err)
	}
	path, _ := wa.SpecPath(testInstance.UUID)

	var stop atomic.Bool
	var reads, bad atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				s, err := cdiapi.ReadSpec(path, 0)
				reads.Add(1)
				if err != nil {
					bad.Add(1)
					continue
				}
				env := s.Devices[0].ContainerEdits.Env
				if !slices.Contains(env, "PHASE=a") && !slices.Contains(env, "PHASE=b") {
					bad.Add(1)
				}
			}
		}()
	}
	for n := range 40 {
		w := wa
		if n%2 == 1 {
			w = wb
		}
		if _, err := w.Write(testInstance, d.paths); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if bad.Load() != 0 {
		t.Fatalf("%d of %d reads saw a missing or partial spec", bad.Load(), reads.Load())
	}
	s, err := cdiapi.ReadSpec(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(s.Devices[0].ContainerEdits.Env, "PHASE=b") {
		t.Errorf("last write not visible: env %q", s.Devices[0].ContainerEdits.Env)
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("dir holds %q, want only the spec", names)
	}
}

func TestStaleTempFilesRemoved(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, ".migpro.dev-mig_MIG-x.json.123.tmp")
	foreign := filepath.Join(dir, ".nvidia.com-gpu.json.123.tmp")
	for _, p := range []string{stale, foreign} {
		if err := os.WriteFile(p, []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := NewWriter(WithLogger(quietlog.New()), WithSpecDir(dir)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale temp of our kind still there: %v", err)
	}
	if _, err := os.Stat(foreign); err != nil {
		t.Errorf("another kind's temp file touched: %v", err)
	}
}

// otherSpecs puts other vendors' files in dir and returns their contents.
func otherSpecs(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{
		"nvidia.com-gpu.yaml": []byte("---\ncdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: all\n  containerEdits:\n    env: [NVIDIA_VISIBLE_DEVICES=all]\n"),
		// Same vendor, other class: not ours either.
		"migpro.dev-other_MIG-4f6a2b3c-1d2e-5f60-8a9b-0c1d2e3f4a5b.json": []byte(`{"cdiVersion":"0.3.0","kind":"migpro.dev/other","devices":[{"name":"x","containerEdits":{"env":["A=1"]}}]}`),
		"notes.txt": []byte("hello"),
	}
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

func TestOtherVendorsUntouched(t *testing.T) {
	d := newDriverWithInstance(t)
	w := newTestWriter(t)
	others := otherSpecs(t, w.Dir())
	if _, err := w.Write(testInstance, d.paths); err != nil {
		t.Fatal(err)
	}
	got, err := w.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].UUID != testInstance.UUID {
		t.Errorf("List = %+v, want only our instance", got)
	}
	if err := w.Remove(testInstance.UUID); err != nil {
		t.Fatal(err)
	}
	for n, want := range others {
		b, err := os.ReadFile(filepath.Join(w.Dir(), n))
		if err != nil || !bytes.Equal(b, want) {
			t.Errorf("%s changed or gone: %v", n, err)
		}
	}
	if names := dirNames(t, w.Dir()); len(names) != len(others) {
		t.Errorf("dir = %q", names)
	}
}

func TestRemove(t *testing.T) {
	d := newDriverWithInstance(t)
	w := newTestWriter(t)
	if _, err := w.Write(testInstance, d.paths); err != nil {
		t.Fatal(err)
	}
	path, _ := w.SpecPath(testInstance.UUID)
	if err := w.Remove(testInstance.UUID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("spec still there: %v", err)
	}
	if err := w.Remove(testInstance.UUID); err != nil {
		t.Errorf("second remove: %v", err)
	}
	if err := w.Remove(""); err == nil {
		t.Error("remove of empty UUID accepted")
	}
}

func TestList(t *testing.T) {
	d := newFakeDriver(t)
	w := newTestWriter(t)
	var want []string
	for gi, u := range []string{"MIG-cccccccc-0000-0000-0000-000000000000", "MIG-aaaaaaaa-0000-0000-0000-000000000000", "MIG-bbbbbbbb-0000-0000-0000-000000000000"} {
		i := Instance{UUID: u, GPUMinor: 1, GPUIndex: 1, GIID: gi + 1, CIID: 0}
		if gi == 0 {
			d.addGPU(1)
		}
		d.addInstance(i, 10+2*gi, 11+2*gi)
		if _, err := w.Write(i, d.paths); err != nil {
			t.Fatal(err)
		}
		want = append(want, u)
	}
	slices.Sort(want)
	got, err := w.List()
	if err != nil {
		t.Fatal(err)
	}
	var uuids []string
	for _, f := range got {
		uuids = append(uuids, f.UUID)
		if f.Name != "migpro.dev/mig="+f.UUID || filepath.Dir(f.Path) != w.Dir() {
			t.Errorf("entry %+v", f)
		}
	}
	if !slices.Equal(uuids, want) {
		t.Fatalf("List UUIDs = %q, want %q", uuids, want)
	}

	// A corrupt file of our kind is reported, the rest still listed.
	bad := filepath.Join(w.Dir(), "migpro.dev-mig_MIG-broken.json")
	if err := os.WriteFile(bad, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = w.List()
	if err == nil || !strings.Contains(err.Error(), "MIG-broken") {
		t.Errorf("err = %v, want one naming the broken file", err)
	}
	if len(got) != 3 {
		t.Errorf("List with a broken file returned %d entries, want 3", len(got))
	}
}
