package cdi

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"
	specs "tags.cncf.io/container-device-interface/specs-go"
)

// TestInjectDevices is the real-consumer check: the CDI library's cache,
// configured like a runtime with our spec directory, resolves the name Write
// returned and edits an OCI spec with our env, device nodes (major/minor from
// the host nodes) and the caller's extra edits.
func TestInjectDevices(t *testing.T) {
	d := newDriverWithInstance(t)
	shim := filepath.Join(t.TempDir(), "libmigshim.so")
	if err := os.WriteFile(shim, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	extra := specs.ContainerEdits{
		Env:    []string{"LD_PRELOAD=/usr/lib/migpro/libmigshim.so"},
		Hooks:  []*specs.Hook{{HookName: "createRuntime", Path: "/usr/bin/migpro-hook", Args: []string{"migpro-hook", "create"}}},
		Mounts: []*specs.Mount{{HostPath: shim, ContainerPath: "/usr/lib/migpro/libmigshim.so", Options: []string{"ro", "bind"}}},
	}
	w := newTestWriter(t, WithExtraEdits(extra))
	otherSpecs(t, w.Dir())
	name, err := w.Write(testInstance, d.paths)
	if err != nil {
		t.Fatal(err)
	}

	cache, err := cdiapi.NewCache(cdiapi.WithSpecDirs(w.Dir()), cdiapi.WithAutoRefresh(false))
	if err != nil {
		t.Fatalf("cache over our dir: %v", err)
	}
	if errs := cache.GetErrors(); len(errs) != 0 {
		t.Fatalf("cache errors: %v", errs)
	}
	spec := &oci.Spec{Process: &oci.Process{Env: []string{"PATH=/bin"}}, Linux: &oci.Linux{}}
	unresolved, err := cache.InjectDevices(spec, name)
	if err != nil {
		t.Fatalf("InjectDevices(%q): %v (unresolved %v)", name, err, unresolved)
	}

	for _, kv := range []string{
		"NVIDIA_VISIBLE_DEVICES=" + testInstance.UUID,
		"CUDA_VISIBLE_DEVICES=" + testInstance.UUID,
		"LD_PRELOAD=/usr/lib/migpro/libmigshim.so",
	} {
		if !slices.Contains(spec.Process.Env, kv) {
			t.Errorf("env %q missing from %q", kv, spec.Process.Env)
		}
	}
	type mm struct{ major, minor int64 }
	want := map[string]mm{
		"/dev/nvidia0":                  {nvidiaMajor, 0},
		"/dev/nvidiactl":                {nvidiaMajor, 255},
		"/dev/nvidia-uvm":               {510, 0},
		"/dev/nvidia-uvm-tools":         {510, 1},
		"/dev/nvidia-caps/nvidia-cap21": {236, 21},
		"/dev/nvidia-caps/nvidia-cap22": {236, 22},
	}
	got := map[string]mm{}
	for _, dev := range spec.Linux.Devices {
		if dev.Type != "c" {
			t.Errorf("device %s type %q, want c", dev.Path, dev.Type)
		}
		got[dev.Path] = mm{dev.Major, dev.Minor}
	}
	if len(got) != len(want) {
		t.Errorf("devices = %v, want %v", got, want)
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("device %s = %v, want %v", p, got[p], w)
		}
	}
	// The device cgroup must allow each of those nodes.
	allowed := map[mm]bool{}
	if spec.Linux.Resources != nil {
		for _, r := range spec.Linux.Resources.Devices {
			if r.Allow && r.Type == "c" && r.Major != nil && r.Minor != nil {
				allowed[mm{*r.Major, *r.Minor}] = true
			}
		}
	}
	for p, n := range want {
		if !allowed[n] {
			t.Errorf("device cgroup does not allow %s (%d:%d)", p, n.major, n.minor)
		}
	}
	if spec.Hooks == nil || len(spec.Hooks.CreateRuntime) != 1 || spec.Hooks.CreateRuntime[0].Path != "/usr/bin/migpro-hook" {
		t.Errorf("hooks = %+v", spec.Hooks)
	}
	found := false
	for _, m := range spec.Mounts {
		found = found || (m.Destination == "/usr/lib/migpro/libmigshim.so" && m.Source == shim)
	}
	if !found {
		t.Errorf("shim mount missing from %+v", spec.Mounts)
	}
}
