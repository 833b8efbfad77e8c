package harness

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"tags.cncf.io/container-device-interface/pkg/cdi"
	cdispecs "tags.cncf.io/container-device-interface/specs-go"
)

// CDIDir is the dynamic CDI spec directory. podman 4.3 and ctr read only
// /etc/cdi and /var/run/cdi, so tests that go through them must write here.
const CDIDir = "/var/run/cdi"

// WriteCDISpec writes spec as JSON into dir (CDIDir when empty), atomically,
// named after its kind, and removes it when t ends. Set spec.Version
// yourself: podman 4.3 accepts at most "0.5.0" and skips newer specs
// silently. It returns the file path.
func WriteCDISpec(t testing.TB, dir string, spec *cdispecs.Spec) string {
	t.Helper()
	if dir == "" {
		dir = CDIDir
	}
	if spec.Version == "" {
		t.Fatal("WriteCDISpec: spec.Version (cdiVersion) must be set")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, strings.NewReplacer("/", "_", ".", "_").Replace(spec.Kind)+".json")
	if err := writeAtomic(path, b, 0o644); err != nil {
		t.Fatalf("write CDI spec: %v", err)
	}
	t.Cleanup(func() { os.Remove(path) })
	return path
}

// ConfigureCDI points the process-wide CDI cache (which the containerd Go
// client's cdi.WithCDIDevices uses) at dirs, and restores the default
// directories when t ends.
func ConfigureCDI(t testing.TB, dirs ...string) {
	t.Helper()
	if err := cdi.Configure(cdi.WithSpecDirs(dirs...)); err != nil {
		t.Fatalf("configure CDI cache: %v", err)
	}
	t.Cleanup(func() { _ = cdi.Configure(cdi.WithSpecDirs(cdi.DefaultSpecDirs...)) })
}

// Mknod makes a character device node at path (mode 0666) and removes it
// when t ends. A node with no driver behind it, such as 195:0 on a host
// without NVIDIA's driver, makes `cat` in a container fail with "No such
// device or address" when the device cgroup allows it, and with "Operation
// not permitted" when it does not.
func Mknod(t testing.TB, path string, major, minor uint32) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	if err := unix.Mknod(path, unix.S_IFCHR|0o666, int(unix.Mkdev(major, minor))); err != nil {
		t.Fatalf("mknod %s c %d %d: %v", path, major, minor, err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(path) })
}
