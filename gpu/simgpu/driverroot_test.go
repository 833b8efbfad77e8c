package simgpu_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/gpu/simgpu/simdrivertest"
	"github.com/migpro/migpro/internal/quietlog"
)

// driverRootNode is a simulated node with a root, the stubs installed into
// it as a driver root, and one 1g.5gb instance.
type driverRootNode struct {
	node  *simgpu.Node
	dev   gpu.Device
	root  string
	stubs simdrivertest.Stubs
	inst  gpu.Instance
}

func newDriverRootNode(t *testing.T) driverRootNode {
	t.Helper()
	stubs, err := simdrivertest.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	n, err := simgpu.NewNode("a100-40gb:1", simgpu.WithRoot(root), simgpu.WithLogger(quietlog.New()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	if err := simgpu.InstallDriverRoot(root, stubs.Dir); err != nil {
		t.Fatal(err)
	}
	d := n.Devices()[0]
	gi := mustCreate(t, d, "1g.5gb", gpu.Placement{Start: 6, Size: 1}, true)
	list, err := d.Instances()
	if err != nil || len(list) != 1 || list[0].GIID != gi {
		t.Fatalf("instances = %+v, %v", list, err)
	}
	return driverRootNode{node: n, dev: d, root: root, stubs: stubs, inst: list[0]}
}

// env is what a container given the instance sees, with the state directory
// at its place under the root instead of at /run/migpro-simgpu.
func (r driverRootNode) env(visible string) []string {
	return []string{
		"PATH=/usr/bin:/bin",
		"LD_LIBRARY_PATH=" + filepath.Join(r.root, simgpu.LibDir),
		"MIGPRO_SIMGPU_STATE=" + filepath.Join(r.root, simgpu.StateDirName),
		"NVIDIA_VISIBLE_DEVICES=" + visible,
	}
}

func TestDriverRootLayout(t *testing.T) {
	r := newDriverRootNode(t)
	lib := filepath.Join(r.root, simgpu.LibDir)
	for link, want := range map[string]string{
		"libcuda.so.1":      "libcuda.so." + simgpu.DriverVersion,
		"libcuda.so":        "libcuda.so.1",
		"libnvidia-ml.so.1": "libnvidia-ml.so." + simgpu.DriverVersion,
		"libnvidia-ml.so":   "libnvidia-ml.so.1",
	} {
		got, err := os.Readlink(filepath.Join(lib, link))
		if err != nil || got != want {
			t.Errorf("%s -> %q (%v), want %q", link, got, err, want)
		}
	}
	for _, f := range []string{
		filepath.Join(lib, "libcuda.so."+simgpu.DriverVersion),
		filepath.Join(lib, "libnvidia-ml.so."+simgpu.DriverVersion),
		filepath.Join(r.root, "usr/bin/nvidia-smi"),
		filepath.Join(r.root, "lib/firmware/nvidia", simgpu.DriverVersion, "gsp_ga10x.bin"),
	} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("driver root lacks %s: %v", f, err)
		}
	}
	v, ret := r.node.Lib().SystemGetDriverVersion()
	cv, ret2 := r.node.Lib().SystemGetCudaDriverVersion()
	if v != simgpu.DriverVersion || cv != simgpu.CUDADriverVersion || ret != 0 || ret2 != 0 {
		t.Fatalf("NVML driver version %q %d (%v %v)", v, cv, ret, ret2)
	}
	out := r.run(t, r.env(r.inst.UUID), filepath.Join(r.root, "usr/bin/nvidia-smi"), "--query-gpu=driver_version", "--format=csv,noheader")
	if strings.TrimSpace(out) != simgpu.DriverVersion {
		t.Fatalf("nvidia-smi driver_version %q, NVML says %q", out, simgpu.DriverVersion)
	}
}

func (r driverRootNode) run(t *testing.T, env []string, prog string, args ...string) string {
	t.Helper()
	cmd := exec.Command(prog, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", prog, args, err, out)
	}
	return string(out)
}

func TestNvidiaSmiListsTheVisibleInstance(t *testing.T) {
	r := newDriverRootNode(t)
	// A second instance the process must not see.
	mustCreate(t, r.dev, "3g.20gb", gpu.Placement{Start: 0, Size: 4}, true)
	smi := filepath.Join(r.root, "usr/bin/nvidia-smi")
	out := r.run(t, r.env(r.inst.UUID), smi, "-L")
	want := fmt.Sprintf("GPU 0: NVIDIA A100-SXM4-40GB (UUID: %s)\n  MIG 1g.5gb      Device  0: (UUID: %s)\n", r.dev.UUID(), r.inst.UUID)
	if out != want {
		t.Fatalf("nvidia-smi -L:\n%s\nwant:\n%s", out, want)
	}
	out = r.run(t, r.env(r.inst.UUID), smi, "--query-gpu=name,memory.total,memory.used", "--format=csv")
	want = "name, memory.total [MiB], memory.used [MiB]\nNVIDIA A100-SXM4-40GB, 4864 MiB, 0 MiB\n"
	if out != want {
		t.Fatalf("nvidia-smi --query-gpu:\n%s\nwant:\n%s", out, want)
	}
	cmd := exec.Command(smi, "-L")
	cmd.Env = r.env("GPU-0")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "No devices were found") {
		t.Fatalf("nvidia-smi with no MIG device visible: %v\n%s", err, out)
	}
}

// prog runs cudaprog with steps, stopping at each "pause" so the test can
// look at the simulated NVML while the process holds memory.
type prog struct {
	t   *testing.T
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func startProg(t *testing.T, bin string, env []string, steps ...string) *prog {
	t.Helper()
	cmd := exec.Command(bin, steps...)
	cmd.Env = env
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return &prog{t: t, cmd: cmd, in: in, out: bufio.NewScanner(out)}
}

// until reads lines up to "paused" (or the end), returning them.
func (p *prog) until() []string {
	var got []string
	for p.out.Scan() {
		l := p.out.Text()
		if l == "paused" {
			return got
		}
		got = append(got, l)
	}
	return got
}

func (p *prog) resume() { fmt.Fprintln(p.in) }

func (p *prog) wait() {
	p.in.Close()
	if err := p.cmd.Wait(); err != nil {
		p.t.Fatalf("cudaprog: %v", err)
	}
}

func expectLines(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("cudaprog printed:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func (r driverRootNode) used(t *testing.T) uint64 {
	t.Helper()
	m, err := r.dev.InstanceMemory(r.inst.GIID)
	if err != nil {
		t.Fatal(err)
	}
	return m.Used
}

func TestStubAllocationsCountInNVML(t *testing.T) {
	r := newDriverRootNode(t)
	total := uint64(4864) << 20
	p := startProg(t, r.stubs.CudaProg, r.env(r.inst.UUID),
		"init", "name", "total", "ctx", "alloc:1048576", "pitch:1000:10", "managed:4096", "async:8192", "pool:100",
		"create:2097152", "info", "pause",
		"free:6", "release:10", "freeasync:8", "pause",
		"alloc:1000", "nofree")
	held := uint64(1048576 + 1024*10 + 4096 + 8192 + 100 + 2097152)
	expectLines(t, p.until(),
		"init 0", "name 0 NVIDIA A100-SXM4-40GB MIG 1g.5gb", fmt.Sprintf("total 0 %d", total), "ctx 0",
		"alloc:1048576 0", "pitch:1000:10 0 1024", "managed:4096 0", "async:8192 0", "pool:100 0",
		"create:2097152 0", fmt.Sprintf("info 0 %d %d", total-held, total))
	if got := r.used(t); got != held {
		t.Fatalf("simulated NVML: %d bytes used, the process holds %d", got, held)
	}
	smi := r.run(t, r.env(r.inst.UUID), filepath.Join(r.root, "usr/bin/nvidia-smi"), "--query-gpu=memory.used", "--format=csv,noheader,nounits")
	if strings.TrimSpace(smi) != fmt.Sprint(held>>20) {
		t.Fatalf("nvidia-smi memory.used %q, want %d MiB", smi, held>>20)
	}
	p.resume()
	expectLines(t, p.until(), "free:6 0", "release:10 0", "freeasync:8 0")
	held -= 1024*10 + 2097152 + 8192
	if got := r.used(t); got != held {
		t.Fatalf("after frees the simulated NVML says %d bytes, the process holds %d", got, held)
	}
	p.resume()
	expectLines(t, p.until(), "alloc:1000 0")
	p.wait()
	// The process exited holding memory: the driver frees it.
	if got := r.used(t); got != 0 {
		t.Fatalf("after the process exited the simulated NVML says %d bytes used", got)
	}
}

func TestStubRefusesWhatTheDriverRefuses(t *testing.T) {
	r := newDriverRootNode(t)
	total := uint64(4864) << 20
	p := startProg(t, r.stubs.CudaProg, r.env(r.inst.UUID),
		"alloc:10", "init", "alloc:10", "ctx", "alloc:0", fmt.Sprintf("alloc:%d", total+1),
		fmt.Sprintf("alloc:%d", total-4096), "alloc:8192", "free:12345", "create:1000", "release:77", "free:7", "alloc:8192")
	expectLines(t, p.until(),
		"alloc:10 3", "init 0", "alloc:10 201", "ctx 0", "alloc:0 1", fmt.Sprintf("alloc:%d 2", total+1),
		fmt.Sprintf("alloc:%d 0", total-4096), "alloc:8192 2", "free:12345 1", "create:1000 1", "release:77 1",
		"free:7 0", "alloc:8192 0")
	p.wait()

	// Two processes share the instance's memory.
	a := startProg(t, r.stubs.CudaProg, r.env(r.inst.UUID), "init", "ctx", fmt.Sprintf("alloc:%d", total-(1<<20)), "pause")
	expectLines(t, a.until(), "init 0", "ctx 0", fmt.Sprintf("alloc:%d 0", total-(1<<20)))
	b := startProg(t, r.stubs.CudaProg, r.env(r.inst.UUID), "init", "ctx", "alloc:2097152", "alloc:1048576", "info")
	expectLines(t, b.until(), "init 0", "ctx 0", "alloc:2097152 2", "alloc:1048576 0", fmt.Sprintf("info 0 0 %d", total))
	b.wait()
	a.resume()
	a.wait()

	// No MIG device visible: no device, as with the real driver.
	c := startProg(t, r.stubs.CudaProg, r.env("none"), "init")
	expectLines(t, c.until(), "init 100")
	c.wait()
}

// What programs ask before they allocate, answered as a real driver answers
// a process that sees one MIG device: one device, the instance's UUID, its
// SM count and compute capability; cuGetProcAddress hands out the same
// functions dlsym finds (the versioned ones for the base names); a created
// context is destroyed once.
func TestStubDeviceQueries(t *testing.T) {
	r := newDriverRootNode(t)
	p := startProg(t, r.stubs.CudaProg, r.env(r.inst.UUID),
		"count", "init", "count", "ctx", "uuid", "attr:16", "attr:75", "attr:76", "attr:10", "attr:9999",
		"proc:cuDeviceGetCount:cuDeviceGetCount", "proc:cuDeviceGetAttribute:cuDeviceGetAttribute",
		"proc:cuDeviceGetUuid:cuDeviceGetUuid_v2", "proc:cuMemAlloc:cuMemAlloc_v2", "proc:cuMemFreeAsync:cuMemFreeAsync",
		"proc:cuCtxDestroy:cuCtxDestroy_v2", "proc:cuMemAlloc:cuMemFree_v2", "proc:cuNoSuchCall:cuInit",
		"destroy", "destroy")
	expectLines(t, p.until(),
		"count 3 -1", "init 0", "count 0 1", "ctx 0", "uuid 0 "+r.inst.UUID,
		"attr:16 0 14", "attr:75 0 8", "attr:76 0 0", "attr:10 0 32", "attr:9999 1 -1",
		"proc:cuDeviceGetCount:cuDeviceGetCount 0 same", "proc:cuDeviceGetAttribute:cuDeviceGetAttribute 0 same",
		"proc:cuDeviceGetUuid:cuDeviceGetUuid_v2 0 same", "proc:cuMemAlloc:cuMemAlloc_v2 0 same",
		"proc:cuMemFreeAsync:cuMemFreeAsync 0 same", "proc:cuCtxDestroy:cuCtxDestroy_v2 0 same",
		"proc:cuMemAlloc:cuMemFree_v2 0 differs", "proc:cuNoSuchCall:cuInit 500 differs",
		"destroy 0", "destroy 201")
	p.wait()
	// The SM count is the compute instance profile's, as NVML reports it
	// (14 on an A100's 1g.5gb).
	h, ret := r.node.Lib().DeviceGetHandleByIndex(0)
	if ret != nvml.SUCCESS {
		t.Fatalf("device handle: %v", ret)
	}
	gi, ret := h.GetGpuInstanceById(r.inst.GIID)
	if ret != nvml.SUCCESS {
		t.Fatalf("GPU instance %d: %v", r.inst.GIID, ret)
	}
	info, ret := gi.GetComputeInstanceProfileInfo(nvml.COMPUTE_INSTANCE_PROFILE_1_SLICE, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
	if ret != nvml.SUCCESS || info.MultiprocessorCount != 14 {
		t.Errorf("NVML compute instance profile %+v (%v), want the 14 SMs the stub reports", info, ret)
	}
}

// A driver upgrade: InstallDriver over a root with another version leaves
// only the new version's libraries and firmware, and a node made with that
// version reports it through NVML and nvidia-smi.
func TestInstallDriverUpgrade(t *testing.T) {
	const v2 = "580.65.06"
	r := newDriverRootNode(t)
	if err := simgpu.InstallDriver(r.root, r.stubs.Dir, v2); err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(r.root, simgpu.LibDir)
	for _, gone := range []string{filepath.Join(lib, "libcuda.so."+simgpu.DriverVersion), filepath.Join(lib, "libnvidia-ml.so."+simgpu.DriverVersion),
		filepath.Join(r.root, "lib/firmware/nvidia", simgpu.DriverVersion)} {
		if _, err := os.Lstat(gone); err == nil {
			t.Errorf("%s is left after the upgrade", gone)
		}
	}
	if got, err := os.Readlink(filepath.Join(lib, "libcuda.so.1")); err != nil || got != "libcuda.so."+v2 {
		t.Errorf("libcuda.so.1 -> %q (%v), want libcuda.so.%s", got, err, v2)
	}
	if err := simgpu.InstallDriver(r.root, t.TempDir(), v2); err == nil || !strings.Contains(err.Error(), "make simdriver") {
		t.Errorf("install from an empty stub dir: %v", err)
	}
	root := t.TempDir()
	n, err := simgpu.NewNode("a100-40gb:1", simgpu.WithRoot(root), simgpu.WithDriverVersion(v2), simgpu.WithLogger(quietlog.New()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	if v, _ := n.Lib().SystemGetDriverVersion(); v != v2 {
		t.Errorf("NVML driver version %q, want %s", v, v2)
	}
	mustCreate(t, n.Devices()[0], "1g.5gb", gpu.Placement{Start: 6, Size: 1}, true)
	list, err := n.Devices()[0].Instances()
	if err != nil || len(list) != 1 {
		t.Fatalf("instances %+v, %v", list, err)
	}
	env := []string{"MIGPRO_SIMGPU_STATE=" + filepath.Join(root, simgpu.StateDirName), "NVIDIA_VISIBLE_DEVICES=" + list[0].UUID}
	out := r.run(t, env, filepath.Join(r.root, "usr/bin/nvidia-smi"), "--query-gpu=driver_version", "--format=csv,noheader")
	if strings.TrimSpace(out) != v2 {
		t.Errorf("nvidia-smi driver_version %q, want %s", out, v2)
	}
}
