package cdi

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/internal/quietlog"
	"golang.org/x/sys/unix"
)

// fakeDriver is a driver tree like /dev plus /proc/driver/nvidia/capabilities,
// made in a temp dir: char device nodes and MIG capability files.
type fakeDriver struct {
	t     testing.TB
	paths gpu.DriverPaths
}

// nvidiaMajor is the real driver's major; the nodes have no driver behind
// them here, which is all a spec needs.
const nvidiaMajor = 195

func newFakeDriver(t testing.TB) *fakeDriver {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making char device nodes needs root")
	}
	root := t.TempDir()
	d := &fakeDriver{t: t, paths: gpu.DriverPaths{DevDir: filepath.Join(root, "dev"), CapsDir: filepath.Join(root, "caps")}}
	d.node("nvidiactl", nvidiaMajor, 255)
	d.node("nvidia-uvm", 510, 0)
	d.node("nvidia-uvm-tools", 510, 1)
	return d
}

func (d *fakeDriver) node(rel string, major, minor uint32) {
	d.t.Helper()
	p := filepath.Join(d.paths.DevDir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		d.t.Fatal(err)
	}
	if err := unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(major, minor))); err != nil {
		d.t.Fatalf("mknod %s: %v", p, err)
	}
}

func (d *fakeDriver) caps(rel, content string) {
	d.t.Helper()
	p := filepath.Join(d.paths.CapsDir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		d.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o444); err != nil {
		d.t.Fatal(err)
	}
}

// addGPU makes /dev/nvidia<minor>.
func (d *fakeDriver) addGPU(minor int) {
	d.node(fmt.Sprintf("nvidia%d", minor), nvidiaMajor, uint32(minor))
}

// addInstance makes the capability files and nvidia-caps nodes of one MIG
// instance, with the given capability minors.
func (d *fakeDriver) addInstance(i Instance, giMinor, ciMinor int) {
	d.caps(giAccessFile(i), fmt.Sprintf("DeviceFileMinor: %d\nDeviceFileMode: 292\n", giMinor))
	d.caps(ciAccessFile(i), fmt.Sprintf("DeviceFileMinor: %d\nDeviceFileMode: 292\n", ciMinor))
	d.node(fmt.Sprintf("nvidia-caps/nvidia-cap%d", giMinor), 236, uint32(giMinor))
	d.node(fmt.Sprintf("nvidia-caps/nvidia-cap%d", ciMinor), 236, uint32(ciMinor))
}

// testInstance is a 1g instance on GPU 0 with capability minors 21 and 22.
var testInstance = Instance{UUID: "MIG-4f6a2b3c-1d2e-5f60-8a9b-0c1d2e3f4a5b", GPUIndex: 0, GPUMinor: 0, GIID: 2, CIID: 0, Profile: "1g.10gb"}

func newDriverWithInstance(t testing.TB) *fakeDriver {
	d := newFakeDriver(t)
	d.addGPU(0)
	d.addInstance(testInstance, 21, 22)
	return d
}

func newTestWriter(t *testing.T, opts ...Option) *Writer {
	t.Helper()
	w, err := NewWriter(append([]Option{WithLogger(quietlog.New()), WithSpecDir(t.TempDir())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// dirNames lists a directory's entries.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

var gpuPathsNone = gpu.DriverPaths{}
