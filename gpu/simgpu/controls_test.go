package simgpu_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"golang.org/x/sys/unix"

	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/internal/quietlog"
)

func TestXidDelivery(t *testing.T) {
	n, _ := simgpu.NewNode("a100-40gb,h100-80gb", simgpu.WithLogger(quietlog.New()))
	d := n.Devices()[1]
	gi := mustCreate(t, d, "2g.20gb", gpu.Placement{Start: 4, Size: 2}, true)

	ctx, cancel := context.WithCancel(context.Background())
	events, err := n.WatchXids(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.InjectXid(1, gi, 48); err != nil {
		t.Fatal(err)
	}
	if err := n.InjectXid(0, -1, 79); err != nil {
		t.Fatal(err)
	}
	want := []gpu.XidEvent{{GPU: 1, GIID: gi, CIID: 0, Xid: 48}, {GPU: 0, GIID: -1, CIID: -1, Xid: 79}}
	for i, w := range want {
		select {
		case ev := <-events:
			if ev.At.IsZero() {
				t.Errorf("event %d has no time", i)
			}
			ev.At = time.Time{}
			if ev != w {
				t.Errorf("event %d = %+v, want %+v", i, ev, w)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("event %d never arrived", i)
		}
	}
	if err := n.InjectXid(1, 99, 13); err == nil {
		t.Error("Xid for an unknown GI accepted")
	}
	cancel()
	select {
	case _, open := <-events:
		if open {
			t.Fatal("event after cancel")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("watch did not stop after cancel")
	}
	// The freed event set no longer receives anything.
	if err := n.InjectXid(1, gi, 48); err != nil {
		t.Fatalf("inject after watch ended: %v", err)
	}
}

func TestFailNth(t *testing.T) {
	n, _ := simgpu.NewNode("a100-40gb", simgpu.WithLogger(quietlog.New()))
	d := n.Devices()[0]
	oneG := profileID(t, d, "1g.5gb")
	if err := n.FailNth(simgpu.OpCreateGI, 2, nvml.ERROR_UNKNOWN); err != nil {
		t.Fatal(err)
	}
	if err := n.FailNth(simgpu.OpDestroyGI, 1, nvml.ERROR_IN_USE); err != nil {
		t.Fatal(err)
	}
	first, err := d.CreateGPUInstance(oneG, gpu.Placement{Start: 0, Size: 1})
	if err != nil {
		t.Fatalf("first create: %v", err)
	}
	before, _ := n.DriverInstances(0)
	_, err = d.CreateGPUInstance(oneG, gpu.Placement{Start: 1, Size: 1})
	var de *gpu.DriverError
	if !errors.As(err, &de) || de.Code != "ERROR_UNKNOWN" {
		t.Fatalf("second create = %v, want injected ERROR_UNKNOWN", err)
	}
	if after, _ := n.DriverInstances(0); !reflect.DeepEqual(before, after) {
		t.Fatalf("failed create changed state: %+v -> %+v", before, after)
	}
	if _, err := d.CreateGPUInstance(oneG, gpu.Placement{Start: 1, Size: 1}); err != nil {
		t.Fatalf("third create: %v", err)
	}
	if err := d.DestroyGPUInstance(first); !errors.Is(err, gpu.ErrInUse) {
		t.Fatalf("destroy = %v, want injected IN_USE", err)
	}
	if err := d.DestroyGPUInstance(first); err != nil {
		t.Fatalf("destroy after the fault: %v", err)
	}
	if n.PendingFaults() != 0 {
		t.Fatalf("%d faults still pending", n.PendingFaults())
	}
	for _, bad := range []struct {
		op   simgpu.Op
		nth  int
		code nvml.Return
	}{{"explode", 1, nvml.ERROR_UNKNOWN}, {simgpu.OpAll, 1, nvml.ERROR_UNKNOWN}, {simgpu.OpCreateCI, 0, nvml.ERROR_UNKNOWN}, {simgpu.OpCreateCI, 1, nvml.SUCCESS}} {
		if err := n.FailNth(bad.op, bad.nth, bad.code); err == nil {
			t.Errorf("FailNth(%q, %d, %d) accepted", bad.op, bad.nth, bad.code)
		}
	}
}

func TestFaultOnComputeInstanceLeavesHalfMadeGI(t *testing.T) {
	n, _ := simgpu.NewNode("h100-80gb", simgpu.WithLogger(quietlog.New()))
	d := n.Devices()[0]
	if err := n.FailNth(simgpu.OpCreateCI, 1, nvml.ERROR_INSUFFICIENT_RESOURCES); err != nil {
		t.Fatal(err)
	}
	gi := mustCreate(t, d, "4g.40gb", gpu.Placement{Start: 0, Size: 4}, false)
	if _, err := d.CreateComputeInstance(gi); !errors.Is(err, gpu.ErrInsufficientResources) {
		t.Fatalf("CI create = %v, want injected INSUFFICIENT_RESOURCES", err)
	}
	list, _ := d.Instances()
	if len(list) != 1 || list[0].Complete() {
		t.Fatalf("listing = %+v, want one half-made GI", list)
	}
	if err := d.DestroyGPUInstance(gi); err != nil {
		t.Fatalf("rolling back the half-made GI: %v", err)
	}
}

func TestLatency(t *testing.T) {
	n, _ := simgpu.NewNode("a30-24gb", simgpu.WithLogger(quietlog.New()))
	d := n.Devices()[0]
	// Long enough that a read on a loaded machine stays well under it.
	const lat = 250 * time.Millisecond
	if err := n.SetLatency(simgpu.OpAll, lat); err != nil {
		t.Fatal(err)
	}
	if err := n.SetLatency(simgpu.OpDestroyGI, 0); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	gi := mustCreate(t, d, "1g.6gb", gpu.Placement{Start: 3, Size: 1}, true)
	if took := time.Since(start); took < 2*lat {
		t.Fatalf("GI+CI took %v, want at least %v", took, 2*lat)
	}
	// Reads are not held up by the configured latency.
	start = time.Now()
	if _, err := d.Instances(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took >= lat {
		t.Fatalf("listing took %v, want under %v", took, lat)
	}
	if err := d.DestroyComputeInstance(gi); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := d.DestroyGPUInstance(gi); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took >= lat {
		t.Fatalf("destroy GI took %v after its latency was cleared", took)
	}
	if err := n.SetLatency("bogus", time.Second); err == nil {
		t.Fatal("unknown op accepted")
	}
	if err := n.SetLatency(simgpu.OpCreateGI, -time.Second); err == nil {
		t.Fatal("negative latency accepted")
	}
}

func TestMIGModeControl(t *testing.T) {
	n, _ := simgpu.NewNode("a100-40gb", simgpu.WithMIGDisabled(), simgpu.WithLogger(quietlog.New()))
	d := n.Devices()[0]
	if on, err := d.MIGEnabled(); err != nil || on {
		t.Fatalf("MIGEnabled = %v, %v; want off", on, err)
	}
	if _, err := d.Profiles(); !errors.Is(err, gpu.ErrNotSupported) {
		t.Fatalf("profiles with MIG off = %v, want not supported", err)
	}
	if err := n.SetMIGMode(0, true); err != nil {
		t.Fatal(err)
	}
	gi := mustCreate(t, d, "7g.40gb", gpu.Placement{Start: 0, Size: 8}, false)
	if err := n.SetMIGMode(0, false); !errors.Is(err, gpu.ErrInUse) {
		t.Fatalf("disabling MIG with a GI = %v, want in use", err)
	}
	if err := d.DestroyGPUInstance(gi); err != nil {
		t.Fatal(err)
	}
	if err := n.SetMIGMode(0, false); err != nil {
		t.Fatal(err)
	}
	if err := n.SetMIGMode(5, true); err == nil {
		t.Fatal("unknown GPU accepted")
	}
}

func TestDeviceFiles(t *testing.T) {
	root := t.TempDir()
	n, err := simgpu.NewNode("a100-40gb:2", simgpu.WithRoot(root), simgpu.WithLogger(quietlog.New()))
	if err != nil {
		t.Fatal(err)
	}
	p := n.Paths()
	if p.DevDir != filepath.Join(root, "dev") || p.CapsDir != filepath.Join(root, "proc/driver/nvidia/capabilities") {
		t.Fatalf("paths = %+v", p)
	}
	for _, name := range []string{"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia0", "nvidia1", "nvidia-caps/nvidia-cap1", "nvidia-caps/nvidia-cap2"} {
		checkNode(t, n.NodeKind(), filepath.Join(p.DevDir, name))
	}
	d := n.Devices()[1]
	gi := mustCreate(t, d, "3g.20gb", gpu.Placement{Start: 0, Size: 4}, true)
	giDir := filepath.Join(p.CapsDir, "gpu1", "mig", "gi"+itoa(gi))
	giMinor := readMinor(t, filepath.Join(giDir, "access"))
	ciMinor := readMinor(t, filepath.Join(giDir, "ci0", "access"))
	// The driver's mig-minors layout: GPU 1 starts after GPU 0's 15x9 entries.
	if wantGI := 3 + 135 + gi*9; giMinor != wantGI || ciMinor != wantGI+1 {
		t.Fatalf("minors gi=%d ci=%d, want %d and %d", giMinor, ciMinor, wantGI, wantGI+1)
	}
	checkNode(t, n.NodeKind(), filepath.Join(p.DevDir, "nvidia-caps", "nvidia-cap"+itoa(giMinor)))
	checkNode(t, n.NodeKind(), filepath.Join(p.DevDir, "nvidia-caps", "nvidia-cap"+itoa(ciMinor)))

	if err := d.DestroyComputeInstance(gi); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(giDir, "ci0")); !os.IsNotExist(err) {
		t.Fatalf("CI capability left behind: %v", err)
	}
	if _, err := os.Stat(filepath.Join(p.DevDir, "nvidia-caps", "nvidia-cap"+itoa(ciMinor))); !os.IsNotExist(err) {
		t.Fatalf("CI cap node left behind: %v", err)
	}
	if err := d.DestroyGPUInstance(gi); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(giDir); !os.IsNotExist(err) {
		t.Fatalf("GI capability left behind: %v", err)
	}
	// A second node on the same root replaces the nodes rather than failing.
	if _, err := simgpu.NewNode("a30-24gb", simgpu.WithRoot(root), simgpu.WithLogger(quietlog.New())); err != nil {
		t.Fatalf("reusing the root: %v", err)
	}
}

func TestNoRootMakesNoFiles(t *testing.T) {
	n, _ := simgpu.NewNode("a30-24gb", simgpu.WithLogger(quietlog.New()))
	if n.Paths() != (gpu.DriverPaths{}) || n.NodeKind() != "" {
		t.Fatalf("paths %+v kind %q without a root", n.Paths(), n.NodeKind())
	}
}

func checkNode(t *testing.T, kind simgpu.NodeKind, path string) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatalf("device node %s: %v", path, err)
	}
	isChar := st.Mode&unix.S_IFMT == unix.S_IFCHR
	switch kind {
	case simgpu.NodeCharDevice:
		if !isChar || unix.Major(st.Rdev) == 1 {
			t.Fatalf("%s: mode %o rdev %d:%d, want a char device off /dev/null's major", path, st.Mode, unix.Major(st.Rdev), unix.Minor(st.Rdev))
		}
		if strings.HasSuffix(path, "nvidiactl") && (unix.Major(st.Rdev) != 195 || unix.Minor(st.Rdev) != 255) {
			t.Fatalf("nvidiactl is %d:%d, want 195:255", unix.Major(st.Rdev), unix.Minor(st.Rdev))
		}
	case simgpu.NodeNullDevice:
		if !isChar || unix.Major(st.Rdev) != 1 || unix.Minor(st.Rdev) != 3 {
			t.Fatalf("%s: want /dev/null's numbers", path)
		}
	case simgpu.NodeRegularFile:
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			t.Fatalf("%s: want a regular file", path)
		}
	default:
		t.Fatalf("unexpected node kind %q", kind)
	}
}

func readMinor(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "DeviceFileMinor: "); ok {
			minor, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("%s: bad minor %q", path, v)
			}
			return minor
		}
	}
	t.Fatalf("%s has no DeviceFileMinor line: %q", path, b)
	return 0
}

func itoa(i int) string { return strconv.Itoa(i) }
