package cdi

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/migpro/migpro/internal/quietlog"
	"golang.org/x/sys/unix"
	specs "tags.cncf.io/container-device-interface/specs-go"
)

// TestOwnDeviceNodesEqualNVCDI shows that migpro's own device-node edits,
// used where nvcdi cannot make the instance's edits, are the ones nvcdi
// makes for the same MIG device: the GPU node, nvidiactl, nvidia-uvm,
// nvidia-uvm-tools and the GI and CI capability nodes, field for field.
//
// nvcdi v1.20.1 reads the capability minors only from the host's
// /proc/driver/nvidia-caps/mig-minors. The test gives it that file, made
// from the simulated driver's capability files, in a private mount namespace
// of one locked thread, and there writes the spec through a Writer whose
// driver makes the device edits. It then writes the same instance's spec
// without a driver (migpro's own nodes) and compares the two specs' nodes.
func TestOwnDeviceNodesEqualNVCDI(t *testing.T) {
	f := newSimFixture(t, testDriverVersion)
	// nvcdi finds a MIG device by UUID and reads its profile; the simulated
	// NVML serves what migpro calls, so these few lookups are added here.
	f.nvml.Interface = &uuidLookupNVML{Interface: f.nvml.Interface}
	minors := migMinorsFile(t, f.node.Paths().CapsDir)

	nvcdiDir := t.TempDir()
	errc := make(chan error, 1)
	go func() {
		// The thread is never unlocked, so it exits with the goroutine and
		// its mount namespace never serves other goroutines.
		runtime.LockOSThread()
		errc <- inMIGMinorsNamespace(minors, func() error {
			d := f.driver(true)
			w, err := NewWriter(WithLogger(quietlog.New()), WithSpecDir(nvcdiDir), WithDriver(d))
			if err != nil {
				return err
			}
			// Make sure the driver's own device edits are used, not the
			// fallback.
			if _, ok, err := d.DeviceEdits(f.inst); !ok || err != nil {
				return fmt.Errorf("nvcdi made no device edits (ok %v): %w", ok, err)
			}
			_, err = w.Write(f.inst, f.node.Paths())
			return err
		})
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	withNVCDI := readSpec(t, &Writer{dir: nvcdiDir, vendor: "migpro.dev", class: "mig"}, f.inst.UUID)
	nvcdiNodes := append(append([]*specs.DeviceNode(nil), withNVCDI.ContainerEdits.DeviceNodes...),
		withNVCDI.Devices[0].ContainerEdits.DeviceNodes...)

	own := newTestWriter(t)
	if _, err := own.Write(f.inst, f.node.Paths()); err != nil {
		t.Fatal(err)
	}
	ownNodes := readSpec(t, own, f.inst.UUID).Devices[0].ContainerEdits.DeviceNodes

	sortNodes(nvcdiNodes)
	sortNodes(ownNodes)
	if len(ownNodes) != 6 {
		t.Fatalf("own nodes = %v, want 6", nodePaths(ownNodes))
	}
	if !reflect.DeepEqual(nvcdiNodes, ownNodes) {
		t.Errorf("device nodes differ:\nnvcdi: %s\nown:   %s", dumpNodes(nvcdiNodes), dumpNodes(ownNodes))
	}
}

func sortNodes(ns []*specs.DeviceNode) {
	sort.Slice(ns, func(a, b int) bool { return ns[a].Path < ns[b].Path })
}

func dumpNodes(ns []*specs.DeviceNode) string {
	var b strings.Builder
	for _, n := range ns {
		fmt.Fprintf(&b, "\n  %s host=%s %d:%d perm=%s", n.Path, n.HostPath, n.Major, n.Minor, n.Permissions)
		if n.FileMode != nil {
			fmt.Fprintf(&b, " mode=%o", *n.FileMode)
		}
		if n.GID != nil {
			fmt.Fprintf(&b, " gid=%d", *n.GID)
		}
	}
	return b.String()
}

// inMIGMinorsNamespace runs fn on the calling (locked) thread in a private
// mount namespace where /proc/driver/nvidia-caps/mig-minors has content.
func inMIGMinorsNamespace(content string, fn func() error) error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("unshare mount namespace: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := unix.Mount("tmpfs", "/proc/driver", "tmpfs", 0, "mode=0755"); err != nil {
		return fmt.Errorf("mount tmpfs on /proc/driver: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(defaultMIGMinorsFile), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(defaultMIGMinorsFile, []byte(content), 0o444); err != nil {
		return err
	}
	return fn()
}

// migMinorsFile writes the driver's mig-minors listing ("gpu0/gi3/access 30",
// "gpu0/gi3/ci0/access 31") from the capability files under capsDir.
func migMinorsFile(t *testing.T, capsDir string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("config 1\nmonitor 2\n")
	err := filepath.Walk(capsDir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() || fi.Name() != "access" {
			return err
		}
		rel, _ := filepath.Rel(capsDir, p)
		if !strings.HasPrefix(rel, "gpu") {
			return nil // the config and monitor capabilities are listed above
		}
		m, err := readCapsMinor(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d\n", strings.Replace(rel, "/mig/", "/", 1), m)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(b.String()))
	lines := 0
	for sc.Scan() {
		lines++
	}
	if lines < 4 {
		t.Fatalf("mig-minors has %d lines, want the instance's GI and CI:\n%s", lines, b.String())
	}
	return b.String()
}

// uuidLookupNVML adds to the simulated NVML the lookups nvcdi makes for a
// MIG device and migpro does not: the handle by UUID, and a MIG device's
// index and attributes, all answered from the simulated state.
type uuidLookupNVML struct{ nvml.Interface }

func (l *uuidLookupNVML) DeviceGetHandleByUUID(uuid string) (nvml.Device, nvml.Return) {
	n, ret := l.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, ret
	}
	for i := 0; i < n; i++ {
		d, ret := l.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, ret
		}
		if u, _ := d.GetUUID(); u == uuid {
			return d, nvml.SUCCESS
		}
		count, _ := d.GetMaxMigDeviceCount()
		for j := 0; j < count; j++ {
			m, ret := d.GetMigDeviceHandleByIndex(j)
			if ret != nvml.SUCCESS {
				continue
			}
			if u, _ := m.GetUUID(); u == uuid {
				return &indexedMIG{Device: m, index: j}, nvml.SUCCESS
			}
		}
	}
	return nil, nvml.ERROR_NOT_FOUND
}

type indexedMIG struct {
	nvml.Device
	index int
}

func (m *indexedMIG) GetIndex() (int, nvml.Return) { return m.index, nvml.SUCCESS }

func (m *indexedMIG) GetAttributes() (nvml.DeviceAttributes, nvml.Return) {
	mem, ret := m.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return nvml.DeviceAttributes{}, ret
	}
	return nvml.DeviceAttributes{MemorySizeMB: mem.Total >> 20}, nvml.SUCCESS
}
