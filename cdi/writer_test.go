package cdi

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/migpro/migpro/internal/quietlog"
	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"
	specs "tags.cncf.io/container-device-interface/specs-go"
)

// versionAtMost reports whether CDI version a ("0.5.0") is <= b.
func versionAtMost(t *testing.T, a, b string) bool {
	t.Helper()
	var pa, pb [3]int
	for i, s := range []string{a, b} {
		p := &pa
		if i == 1 {
			p = &pb
		}
		parts := strings.Split(strings.TrimPrefix(s, "v"), ".")
		if len(parts) != 3 {
			t.Fatalf("bad version %q", s)
		}
		for j, x := range parts {
			for _, c := range x {
				if c < '0' || c > '9' {
					t.Fatalf("bad version %q", s)
				}
				p[j] = p[j]*10 + int(c-'0')
			}
		}
	}
	return slices.Compare(pa[:], pb[:]) <= 0
}

func TestWriteSpecContent(t *testing.T) {
	d := newDriverWithInstance(t)
	w := newTestWriter(t)
	name, err := w.Write(testInstance, d.paths)
	if err != nil {
		t.Fatal(err)
	}
	if want := "migpro.dev/mig=" + testInstance.UUID; name != want {
		t.Fatalf("name = %q, want %q", name, want)
	}
	path, _ := w.SpecPath(testInstance.UUID)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v, want 0644", fi.Mode().Perm())
	}
	if got := filepath.Base(path); got != "migpro.dev-mig_"+testInstance.UUID+".json" {
		t.Errorf("file name = %q", got)
	}

	s, err := cdiapi.ReadSpec(path, 0)
	if err != nil {
		t.Fatalf("library cannot read the spec: %v", err)
	}
	if s.Kind != "migpro.dev/mig" {
		t.Errorf("kind = %q", s.Kind)
	}
	if s.Version == "" || !versionAtMost(t, s.Version, "0.5.0") {
		t.Errorf("cdiVersion = %q, want set and <= 0.5.0 (podman 4.3)", s.Version)
	}
	if len(s.Devices) != 1 || s.Devices[0].Name != testInstance.UUID {
		t.Fatalf("devices = %+v", s.Devices)
	}
	e := s.Devices[0].ContainerEdits
	wantEnv := []string{"NVIDIA_VISIBLE_DEVICES=" + testInstance.UUID, "CUDA_VISIBLE_DEVICES=" + testInstance.UUID}
	if !slices.Equal(e.Env, wantEnv) {
		t.Errorf("env = %q, want %q", e.Env, wantEnv)
	}
	want := map[string]string{
		"/dev/nvidia0":                  "nvidia0",
		"/dev/nvidiactl":                "nvidiactl",
		"/dev/nvidia-uvm":               "nvidia-uvm",
		"/dev/nvidia-uvm-tools":         "nvidia-uvm-tools",
		"/dev/nvidia-caps/nvidia-cap21": "nvidia-caps/nvidia-cap21",
		"/dev/nvidia-caps/nvidia-cap22": "nvidia-caps/nvidia-cap22",
	}
	if len(e.DeviceNodes) != len(want) {
		t.Fatalf("got %d device nodes, want %d: %+v", len(e.DeviceNodes), len(want), e.DeviceNodes)
	}
	seen := map[string]bool{}
	for _, n := range e.DeviceNodes {
		seen[n.Path] = true
		rel, ok := want[n.Path]
		if !ok {
			t.Errorf("unexpected node %q", n.Path)
			continue
		}
		if wantHost := filepath.Join(d.paths.DevDir, rel); n.HostPath != wantHost {
			t.Errorf("node %s hostPath = %q, want %q", n.Path, n.HostPath, wantHost)
		}
	}
	for p := range want {
		if !seen[p] {
			t.Errorf("node %s missing", p)
		}
	}
	if len(s.ContainerEdits.Env)+len(s.ContainerEdits.DeviceNodes) != 0 {
		t.Errorf("spec-level edits should be empty, got %+v", s.ContainerEdits)
	}
}

func TestWriteAcceptsUUIDWithoutPrefix(t *testing.T) {
	d := newDriverWithInstance(t)
	w := newTestWriter(t)
	i := testInstance
	i.UUID = strings.TrimPrefix(i.UUID, "MIG-")
	name, err := w.Write(i, d.paths)
	if err != nil {
		t.Fatal(err)
	}
	if name != "migpro.dev/mig="+testInstance.UUID {
		t.Fatalf("name = %q", name)
	}
}

func TestWriteBadInputWritesNothing(t *testing.T) {
	d := newDriverWithInstance(t)
	// A regular file where a device node must be.
	if err := os.WriteFile(filepath.Join(d.paths.DevDir, "nvidia7"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d.caps("gpu0/mig/gi9/access", "DeviceFileMode: 292\n")
	d.caps("gpu0/mig/gi9/ci0/access", "DeviceFileMinor: 5\n")
	d.caps("gpu0/mig/gi8/access", "DeviceFileMinor: x\n")
	d.caps("gpu0/mig/gi8/ci0/access", "DeviceFileMinor: 5\n")
	d.caps("gpu7/mig/gi2/access", "DeviceFileMinor: 21\n")
	d.caps("gpu7/mig/gi2/ci0/access", "DeviceFileMinor: 22\n")

	with := func(f func(*Instance)) Instance { i := testInstance; f(&i); return i }
	cases := []struct {
		name string
		inst Instance
		want string
	}{
		{"empty UUID", with(func(i *Instance) { i.UUID = "" }), "empty MIG UUID"},
		{"missing GI caps file", with(func(i *Instance) { i.GIID = 5 }), "gi5/access"},
		{"missing CI caps file", with(func(i *Instance) { i.CIID = 3 }), "ci3/access"},
		{"no minor line", with(func(i *Instance) { i.GIID = 9 }), "no DeviceFileMinor"},
		{"bad minor line", with(func(i *Instance) { i.GIID = 8 }), "bad DeviceFileMinor"},
		{"missing GPU node", with(func(i *Instance) { i.GPUMinor = 3 }), "gpu3/mig"},
		{"node not a char device", with(func(i *Instance) { i.GPUMinor = 7 }), "not a character device"},
		{"half-made instance", with(func(i *Instance) { i.CIID = -1 }), "not complete"},
	}
	w := newTestWriter(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := w.Write(c.inst, d.paths)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q: want one line mentioning %q", err, c.want)
			}
			if names := dirNames(t, w.Dir()); len(names) != 0 {
				t.Errorf("spec dir not empty: %q", names)
			}
		})
	}
	// Missing GPU node with valid caps: the GPU's own node is checked.
	_, err := w.Write(with(func(i *Instance) { i.GPUMinor = 7; i.GPUIndex = 7 }), d.paths)
	if err == nil || !strings.Contains(err.Error(), "nvidia7") {
		t.Errorf("error = %v, want one naming nvidia7", err)
	}
	if _, err := w.Write(testInstance, gpuPathsNone); err == nil {
		t.Error("empty driver paths accepted")
	}
}

func TestNewWriterRejectsBadKinds(t *testing.T) {
	for _, k := range []string{"nvidia.com/gpu", "noclass", "bad vendor/mig", "migpro.dev/", "/mig"} {
		if _, err := NewWriter(WithLogger(quietlog.New()), WithSpecDir(t.TempDir()), WithKind(k)); err == nil {
			t.Errorf("kind %q accepted", k)
		}
	}
	if _, err := NewWriter(WithLogger(quietlog.New()), WithSpecDir(t.TempDir()), WithExtraEdits(specs.ContainerEdits{Env: []string{"=x"}})); err == nil {
		t.Error("bad extra env accepted")
	}
}

func TestVersionFollowsContent(t *testing.T) {
	d := newDriverWithInstance(t)
	// Extra edits that need a newer CDI version raise it; the basic content
	// stays at 0.5.0 or below (checked in TestWriteSpecContent).
	w := newTestWriter(t, WithExtraEdits(specs.ContainerEdits{AdditionalGIDs: []uint32{44}}))
	if _, err := w.Write(testInstance, d.paths); err != nil {
		t.Fatal(err)
	}
	path, _ := w.SpecPath(testInstance.UUID)
	s, err := cdiapi.ReadSpec(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if versionAtMost(t, s.Version, "0.6.0") {
		t.Errorf("cdiVersion = %q with additionalGids, want >= 0.7.0", s.Version)
	}
}

func TestDeviceName(t *testing.T) {
	cases := map[string]string{
		"MIG-4f6a2b3c-1d2e-5f60-8a9b-0c1d2e3f4a5b": "MIG-4f6a2b3c-1d2e-5f60-8a9b-0c1d2e3f4a5b",
		"4f6a2b3c-1d2e-5f60-8a9b-0c1d2e3f4a5b":     "MIG-4f6a2b3c-1d2e-5f60-8a9b-0c1d2e3f4a5b",
		"MIG-GPU-6e9d1b5c-aaaa/1/0":                "MIG-GPU-6e9d1b5c-aaaa_1_0",
	}
	for in, want := range cases {
		got, err := DeviceName(in)
		if err != nil || got != want {
			t.Errorf("DeviceName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := DeviceName(" "); err == nil {
		t.Error("blank UUID accepted")
	}
}

// On a real node (DevDir /dev) the spec needs no hostPath and so only
// cdiVersion 0.3.0; with a simulated GPU's own dir it needs 0.5.0.
func TestVersionWithRealPaths(t *testing.T) {
	d := newDriverWithInstance(t)
	for _, c := range []struct {
		devDir string
		rels   []string
		want   string
	}{{"/dev", []string{"null", "zero"}, "0.3.0"}, {d.paths.DevDir, []string{"nvidia0", "nvidiactl", "nvidia-caps/nvidia-cap21"}, "0.5.0"}} {
		var nodes []*specs.DeviceNode
		for _, r := range c.rels {
			n, err := specNode(c.devDir, r)
			if err != nil {
				t.Fatal(err)
			}
			nodes = append(nodes, n)
		}
		spec := &specs.Spec{Kind: DefaultKind, Devices: []specs.Device{{Name: testInstance.UUID, ContainerEdits: instanceEdits(testInstance, nodes)}}}
		got, err := specs.MinimumRequiredVersion(spec)
		if err != nil || got != c.want {
			t.Errorf("dev dir %s: version %q, %v; want %q", c.devDir, got, err, c.want)
		}
	}
}
