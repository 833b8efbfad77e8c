package shimtest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/gpu/simgpu/simdrivertest"
	"github.com/migpro/migpro/internal/quietlog"
	"github.com/migpro/migpro/telemetry"
)

// A program in a glibc rootfs with no CUDA toolkit dlopens the simulated
// driver's libcuda.so.1, initialises, allocates and frees with the shim
// preloaded; at every point the shim's live bytes and the simulated NVML's
// used memory for the instance are the same number.
func TestShimAgreesWithSimulatedNVML(t *testing.T) {
	a := artifacts(t)
	root := oldGlibcRoot(t)
	work, err := os.MkdirTemp(filepath.Join(root, "tmp"), "simdriver")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(work)
	in := func(p string) string { return "/" + strings.TrimPrefix(strings.TrimPrefix(p, root), "/") }

	stubs, err := simdrivertest.Build(filepath.Join(work, "stubs"))
	if err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(root, "lib", "x86_64-linux-gnu")
	prog := filepath.Join(work, "cudaprog")
	if err := simdrivertest.BuildCudaProg(prog, []string{"--sysroot=" + root, "-B" + filepath.Join(root, "usr/lib/x86_64-linux-gnu"),
		"-L" + filepath.Join(root, "usr/lib/x86_64-linux-gnu"), "-L" + lib, "-Wl,-rpath-link," + lib}); err != nil {
		t.Fatal(err)
	}
	shim := filepath.Join(work, "libmigpro-shim.so")
	data, err := os.ReadFile(a.Shim)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(shim, data, 0o755); err != nil {
		t.Fatal(err)
	}

	nodeRoot := filepath.Join(work, "node")
	n, err := simgpu.NewNode("a100-40gb:1", simgpu.WithRoot(nodeRoot), simgpu.WithLogger(quietlog.New()))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := simgpu.InstallDriverRoot(nodeRoot, stubs.Dir); err != nil {
		t.Fatal(err)
	}
	d := n.Devices()[0]
	var oneG int
	ps, err := d.Profiles()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Name == "1g.5gb" {
			oneG = p.ID
		}
	}
	gi, err := d.CreateGPUInstance(oneG, gpu.Placement{Start: 0, Size: 1})
	if err != nil {
		t.Fatal(err)
	}
	inst, err := d.CreateComputeInstance(gi)
	if err != nil {
		t.Fatal(err)
	}

	l := listenAt(t, filepath.Join(work, "telemetry.sock"))
	cmd := chrooted(root, in(prog), "init", "ctx", "alloc:1048576", "managed:4096", "pitch:1000:10", "async:8192",
		"create:2097152", "info", "pause", "free:4", "release:7", "info", "pause", "alloc:777", "nofree")
	cmd.Env = []string{
		"LD_PRELOAD=" + in(shim),
		"LD_LIBRARY_PATH=" + in(filepath.Join(nodeRoot, simgpu.LibDir)),
		"MIGPRO_SIMGPU_STATE=" + in(filepath.Join(nodeRoot, simgpu.StateDirName)),
		"NVIDIA_VISIBLE_DEVICES=" + inst.UUID,
		"MIGPRO_TELEMETRY_SOCKET=" + in(l.path),
		"MIGPRO_TELEMETRY_INTERVAL_MS=0",
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	sc := bufio.NewScanner(stdout)
	until := func() []string {
		var got []string
		for sc.Scan() {
			if sc.Text() == "paused" {
				break
			}
			got = append(got, sc.Text())
		}
		return got
	}
	agree := func(want uint64, lines []string) {
		t.Helper()
		for _, line := range lines {
			if f := strings.Fields(line); len(f) < 2 || f[1] != "0" {
				t.Fatalf("driver call failed: %q (all: %q)", line, lines)
			}
		}
		ms := l.wait(t, func(ms []telemetry.Message) bool { return len(ms) > 0 && ms[len(ms)-1].Current == want })
		mem, err := d.InstanceMemory(gi)
		if err != nil {
			t.Fatal(err)
		}
		if mem.Used != want {
			t.Fatalf("simulated NVML: %d bytes used on %s; the shim's last message says %d (%+v)", mem.Used, inst.UUID, want, ms[len(ms)-1])
		}
	}
	held := uint64(1048576 + 4096 + 1024*10 + 8192 + 2097152)
	agree(held, until())
	fmt.Fprintln(stdin)
	held -= 4096 + 2097152
	agree(held, until())
	fmt.Fprintln(stdin)
	rest, _ := io.ReadAll(stdout)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("cudaprog: %v\n%s", err, rest)
	}
	// The process exited holding memory: the driver released it.
	if mem, err := d.InstanceMemory(gi); err != nil || mem.Used != 0 {
		t.Fatalf("after exit the simulated NVML says %+v, %v", mem, err)
	}
}
