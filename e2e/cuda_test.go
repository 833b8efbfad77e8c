//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/pkg/cdi"
	"github.com/containerd/containerd/v2/pkg/oci"

	"github.com/migpro/migpro/e2e/harness"
	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/gpu/simgpu/simdrivertest"
	"github.com/migpro/migpro/hook/shimtest"
)

// Issue 14, part 4: a CUDA program runs in a migpro container from the CDI
// spec alone. The container's root filesystem has a glibc, busybox and the
// programs, and no CUDA at all: libcuda.so.<version>, nvidia-smi and the
// device nodes come from the spec's driver edits (nvcdi, against the
// simulated driver root), and the libcuda.so.1 link from the spec's
// nvidia-cdi-hook hooks (create-symlinks, and update-ldcache running ldconfig
// in the container).

// cudaAllocBytes is what the program allocates: 256 MiB.
const cudaAllocBytes = 256 << 20

// chainSrc is a library that chains getpid with dlsym(RTLD_NEXT, ...), as
// UCX, OpenMPI's memory hooks and profilers chain their interposers, and a
// program linked against it that also uses CUDA through dlopen. If RTLD_NEXT
// resolved relative to the shim, the library would get its own getpid back
// and recurse; it stops at depth 3 and says so.
const chainLibSrc = `#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>
static int depth;
pid_t getpid(void)
{
	static pid_t (*next)(void);
	if (next == NULL)
		next = (pid_t (*)(void))dlsym(RTLD_NEXT, "getpid");
	if (next == NULL || next == getpid || ++depth > 3) {
		printf("chain broken: next=%p self=%p depth=%d\n", (void *)next, (void *)getpid, depth);
		fflush(stdout);
		_exit(5);
	}
	pid_t p = next();
	depth--;
	return p;
}
`

const chainProgSrc = `#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW);
	if (lib == NULL) { printf("dlopen %s\n", dlerror()); return 2; }
	int (*init)(unsigned) = dlsym(lib, "cuInit");
	int (*get)(int *, int) = dlsym(lib, "cuDeviceGet");
	int (*ctx)(void **, unsigned, int) = dlsym(lib, "cuCtxCreate_v2");
	int (*alloc)(unsigned long long *, size_t) = dlsym(lib, "cuMemAlloc_v2");
	int (*fr)(unsigned long long) = dlsym(lib, "cuMemFree_v2");
	int dev; void *c; unsigned long long p;
	int r = init(0);
	if (r == 0) r = get(&dev, 0);
	if (r == 0) r = ctx(&c, 0, dev);
	if (r == 0) r = alloc(&p, 1 << 20);
	if (r == 0) r = fr(p);
	pid_t pid = getpid();
	char line[512];
	int shim = 0;
	FILE *maps = fopen("/proc/self/maps", "r");
	while (maps != NULL && fgets(line, sizeof line, maps) != NULL)
		shim |= strstr(line, "libmigpro-shim") != NULL;
	printf("chain cuda=%d getpid=%s shim=%s\n", r, pid > 0 ? "ok" : "bad", shim ? "loaded" : "absent");
	return r;
}
`

// cudaEnv is what the CUDA tests share: the simulated driver's stubs, the
// driver root the agent installs them into, the shim, and a root filesystem.
type cudaEnv struct {
	stubs      simdrivertest.Stubs
	driverRoot string
	shim       string
}

var (
	cudaOnce sync.Once
	cudaArt  struct {
		stubs simdrivertest.Stubs
		chain string // dir with chainprog and libchain.so
		err   error
	}
)

func newCUDAEnv(t *testing.T) *cudaEnv {
	t.Helper()
	harness.RequireRoot(t)
	work, _ := filepath.Abs(filepath.Join(".work", "cuda"))
	cudaOnce.Do(func() {
		cudaArt.stubs, cudaArt.err = simdrivertest.Build(filepath.Join(work, "stubs"))
		if cudaArt.err == nil {
			cudaArt.chain, cudaArt.err = buildChain(filepath.Join(work, "chain"))
		}
	})
	if cudaArt.err != nil {
		t.Fatal(cudaArt.err)
	}
	shimOnce.Do(func() {
		w, _ := filepath.Abs(filepath.Join(".work", "hook"))
		shimArt, shimErr = shimtest.Build(filepath.Join(w, "art"))
	})
	if shimErr != nil {
		t.Fatal(shimErr)
	}
	dir, err := os.MkdirTemp("", "mpcuda")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// The agent installs the simulated driver there itself (--sim-driver).
	return &cudaEnv{stubs: cudaArt.stubs, driverRoot: filepath.Join(dir, "driver"), shim: shimArt.Shim}
}

func buildChain(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for name, src := range map[string]string{"chainlib.c": chainLibSrc, "chainprog.c": chainProgSrc} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			return "", err
		}
	}
	steps := [][]string{
		{"-O2", "-fPIC", "-shared", "-o", filepath.Join(dir, "libchain.so"), filepath.Join(dir, "chainlib.c"), "-ldl"},
		{"-O2", "-o", filepath.Join(dir, "chainprog"), filepath.Join(dir, "chainprog.c"), "-L" + dir, "-lchain", "-ldl", "-Wl,-rpath,/app"},
	}
	for _, s := range steps {
		if out, err := exec.Command("gcc", s...).CombinedOutput(); err != nil {
			return "", fmt.Errorf("gcc %v: %w\n%s", s, err, out)
		}
	}
	return dir, nil
}

// glibcRootfs is the host's glibc and loader, static busybox for the shell,
// and the two programs in /app. It holds no libcuda and no nvidia-smi. Each
// run gets a fresh one: podman --rootfs writes into it (mount points, and
// the links update-ldcache makes).
func (e *cudaEnv) glibcRootfs(t *testing.T) string {
	t.Helper()
	root := harness.BusyboxRootfs(t)
	progs := []string{e.stubs.CudaProg, filepath.Join(cudaArt.chain, "chainprog"), filepath.Join(cudaArt.chain, "libchain.so")}
	for _, f := range progs {
		copyInto(t, f, filepath.Join(root, "app", filepath.Base(f)))
	}
	// chainprog needs what cudaprog needs plus libchain.so, which ldd
	// cannot find on the host (its rpath is /app).
	for _, lib := range sharedLibs(t, e.stubs.CudaProg, progs[2], e.shim, filepath.Join(e.stubs.Dir, "nvidia-smi")) {
		copyInto(t, lib, filepath.Join(root, lib))
	}
	// update-ldcache treats the container as Debian-like when it says so.
	if err := os.WriteFile(filepath.Join(root, "etc", "debian_version"), []byte("12.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"usr/lib/x86_64-linux-gnu/libcuda.so.1", "usr/bin/nvidia-smi"} {
		if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
			t.Fatalf("rootfs already has %s", p)
		}
	}
	return root
}

// startCUDAAgent runs the agent with the simulated driver, which it installs
// from the stubs under --driver-root, the real nvidia-cdi-hook and the
// telemetry hook and shim.
func (e *cudaEnv) startCUDAAgent(t *testing.T, extra ...string) *agentProc {
	t.Helper()
	args := append([]string{"--sim-driver", e.stubs.Dir, "--driver-root", e.driverRoot, "--nvidia-cdi-hook-path", harness.Bin(t, "nvidia-cdi-hook"),
		"--hook", migproBin(t, "migpro-hook"), "--shim", e.shim, "--poll-every", "100ms"}, extra...)
	return startAgent(t, "a100-40gb", args...)
}

// cudaScript runs the CUDA program, nvidia-smi -L and the chaining program,
// which reports whether the shim is in its process (the hook preloads it).
func cudaScript(allocSteps string) string {
	return fmt.Sprintf(`/app/cudaprog %s; echo "rc=$?"; echo ---; nvidia-smi -L; echo "smi=$?"; echo ---; /app/chainprog; echo "chain=$?"; `+
		`ls -l /usr/lib/x86_64-linux-gnu/ | sed 's/^/LIB /'`, allocSteps)
}

const plainSteps = "init ctx info alloc:268435456 free:4 info"

// checkCUDAOutput checks what cudaScript printed for the instance uuid.
func checkCUDAOutput(t *testing.T, out, uuid string) {
	t.Helper()
	for _, want := range []string{"init 0", "ctx 0", "alloc:268435456 0", "free:4 0", "rc=0", "smi=0", "chain cuda=0 getpid=ok shim=loaded", "chain=0",
		"libcuda.so.1 -> libcuda.so." + simgpu.DriverVersion} {
		if !strings.Contains(out, want) {
			t.Errorf("container output lacks %q:\n%s", want, out)
		}
	}
	checkSMI(t, out, uuid)
}

var smiMIG = regexp.MustCompile(`(?m)^\s+MIG .*\(UUID: (MIG-[0-9a-f-]+)\)`)

// checkSMI checks nvidia-smi -L listed exactly the instance.
func checkSMI(t *testing.T, out, uuid string) {
	t.Helper()
	got := smiMIG.FindAllStringSubmatch(out, -1)
	if len(got) != 1 || got[0][1] != uuid {
		t.Errorf("nvidia-smi -L lists MIG devices %v, want exactly %s:\n%s", got, uuid, out)
	}
}

func TestCUDAFromSpec(t *testing.T) {
	e := newCUDAEnv(t)
	a := e.startCUDAAgent(t)

	t.Run("podman", func(t *testing.T) {
		name := a.mustMigctl(t, "alloc", "1g.5gb")
		uuid := strings.TrimPrefix(name, e2eKind+"=")
		checkSpecCarriesDriver(t, uuid)
		pm := harness.Podman(t)
		r := pm.RunRootfs(t, e.glibcRootfs(t), harness.DeviceFlags(name), "sh", "-c", cudaScript(plainSteps)).Must(t)
		checkCUDAOutput(t, r.Combined(), uuid)

		// While the program holds its allocation, migctl top shows the
		// bytes the shim saw, and the simulated NVML's used memory for the
		// instance (polled by the agent) agrees.
		rootfs := e.glibcRootfs(t)
		fifo := filepath.Join(rootfs, "tmp", "go")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		done := make(chan harness.Result, 1)
		go func() {
			done <- pm.RunRootfs(t, rootfs, harness.DeviceFlags(name), "sh", "-c",
				"/app/cudaprog init ctx alloc:268435456 pause free:3 alloc:1048576 < /tmp/go")
		}()
		w := openFIFO(t, fifo, done)
		waitTopAgrees(t, a, uuid)
		// The agent restarts while the program holds its memory: the specs
		// are written again (a driver upgrade is picked up this way), the
		// instance keeps its name, and the running program keeps working.
		a.stop(t, syscall.SIGTERM)
		a.start(t)
		checkSpecCarriesDriver(t, uuid)
		fmt.Fprintln(w, "go")
		w.Close()
		r = (<-done).Must(t)
		for _, want := range []string{"free:3 0", "alloc:1048576 0"} {
			if !strings.Contains(r.Combined(), want) {
				t.Errorf("paused program lacks %q after the agent restarted: %s", want, r.Combined())
			}
		}
		a.mustMigctl(t, "free", name)
	})

	t.Run("containerd", func(t *testing.T) {
		c := harness.StartContainerd(t)
		const ns, image = "migpro-e2e", "migpro-e2e.test/cuda:1"
		archive := filepath.Join(t.TempDir(), "cuda.tar")
		if err := harness.WriteOCIArchive(archive, harness.ImageSpec{Name: image, Rootfs: e.glibcRootfs(t), Entrypoint: []string{"/bin/sh"}}); err != nil {
			t.Fatal(err)
		}
		c.ImportArchive(t, ns, archive)
		harness.ConfigureCDI(t, "/var/run/cdi")

		name := a.mustMigctl(t, "alloc", "1g.5gb")
		uuid := strings.TrimPrefix(name, e2eKind+"=")
		r := c.RunTask(t, ns, "cuda-client", image, oci.WithProcessArgs("sh", "-c", cudaScript(plainSteps)), cdi.WithCDIDevices(name))
		if r.Err != nil || r.ExitCode != 0 {
			t.Fatalf("client run: exit %d, %v\n%s", r.ExitCode, r.Err, r.Combined())
		}
		checkCUDAOutput(t, r.Combined(), uuid)

		args := append([]string{"-n", ns, "run", "--rm"}, c.CtrRunFlags()...)
		args = append(args, harness.DeviceFlags(name)...)
		args = append(args, image, "cuda-ctr", "sh", "-c", cudaScript(plainSteps))
		checkCUDAOutput(t, c.Ctr(t, args...).Must(t).Combined(), uuid)

		// A task holding its allocation: migctl top and the simulated NVML
		// agree on its bytes, as in the podman run.
		release := a.releaseFile("containerd")
		done := make(chan harness.Result, 1)
		go func() {
			done <- c.RunTask(t, ns, "cuda-hold", image, oci.WithProcessArgs("sh", "-c", holdScript(release)), cdi.WithCDIDevices(name))
		}()
		waitTopAgrees(t, a, uuid)
		releaseHold(t, a, release, done)
		a.mustMigctl(t, "free", name)
	})
}

// holdScript allocates cudaAllocBytes and holds them until the host creates
// the release file in the simulated driver's state directory (the spec
// mounts it at /run/migpro-simgpu), then exits; the driver frees the memory.
func holdScript(release string) string {
	return fmt.Sprintf(`(while [ ! -e %s/%s ]; do sleep 0.1; done) | /app/cudaprog init ctx alloc:%d pause; echo "held=$?"`,
		simgpu.ContainerStateDir, release, cudaAllocBytes)
}

// releaseFile names a hold's release file, distinct per run.
func (a *agentProc) releaseFile(name string) string {
	return fmt.Sprintf("release-%s-%d", name, time.Now().UnixNano())
}

// releaseHold lets holdScript's program exit and, when done is not nil,
// checks the container ended well.
func releaseHold(t *testing.T, a *agentProc, release string, done <-chan harness.Result) {
	t.Helper()
	p := filepath.Join(a.Dir, "sim", simgpu.StateDirName, release)
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(p) })
	if done == nil {
		return
	}
	select {
	case r := <-done:
		if !strings.Contains(r.Combined(), "held=0") {
			t.Errorf("holding program: exit %d, %v\n%s", r.ExitCode, r.Err, r.Combined())
		}
	case <-time.After(60 * time.Second):
		t.Error("holding program did not end after its release")
	}
}

// waitTopAgrees waits until migctl top shows, for the one container on
// uuid, cudaAllocBytes both from the shim and from the simulated NVML's
// used memory for the instance (polled by the agent).
func waitTopAgrees(t *testing.T, a *agentProc, uuid string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var seen string
	for {
		for _, c := range a.top(t).Containers {
			if len(c.MIGUUIDs) == 1 && c.MIGUUIDs[0] == uuid {
				seen = fmt.Sprintf("%+v", c)
				if c.ShimBytes == cudaAllocBytes && c.NVMLBytes == cudaAllocBytes {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("top never showed %d bytes from the shim and NVML on %s; last %s\nagent log:\n%s", cudaAllocBytes, uuid, seen, a.logTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestCUDAKubeletPod runs the CUDA program in a pod: the kubelet asks the
// agent's device plugin, containerd's CRI plugin applies the spec.
func TestCUDAKubeletPod(t *testing.T) {
	e := newCUDAEnv(t)
	c := harness.StartContainerd(t)
	k := harness.StartKubelet(t, harness.KubeletOptions{Containerd: c})
	const image = "migpro-e2e.test/cuda:1"
	archive := filepath.Join(t.TempDir(), "cuda.tar")
	if err := harness.WriteOCIArchive(archive, harness.ImageSpec{Name: image, Rootfs: e.glibcRootfs(t), Entrypoint: []string{"/bin/sh"}}); err != nil {
		t.Fatal(err)
	}
	c.ImportArchive(t, "k8s.io", archive)
	a := e.startCUDAAgent(t, "--plugin-dir", harness.DevicePluginDir, "--pod-resources", k.PodResourcesSocket(), "--warm-pool", "1g.5gb=1")
	release := a.releaseFile("kubelet")
	// The kubelet admits a static pod once it counts the resource.
	eventually(t, "a 1g.5gb counted by the kubelet", 60*time.Second, func() bool {
		return strings.Contains(k.Log(), `plugin="`+migResource+`" capacity=1`)
	})
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: cuda
  namespace: default
spec:
  hostNetwork: true
  restartPolicy: Never
  containers:
  - name: main
    image: %s
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", %q]
    resources:
      limits:
        %s: 1
`, image, `echo "NVD=$NVIDIA_VISIBLE_DEVICES"; `+cudaScript(plainSteps)+`; echo END; `+holdScript(release)+`; sleep 600`, migResource)
	k.WriteStaticPod(t, "cuda", manifest)
	k.WaitPodRunning(t, "cuda", 90*time.Second)
	var out string
	eventually(t, "the pod's output", 60*time.Second, func() bool {
		out = k.ContainerLog(t, "cuda", "main")
		return strings.Contains(out, "END")
	})
	m := regexp.MustCompile(`NVD=(MIG-[0-9a-f-]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("pod printed no instance:\n%s", out)
	}
	checkCUDAOutput(t, out, m[1])
	// The pod then holds its allocation: migctl top and the simulated NVML
	// agree on its bytes.
	waitTopAgrees(t, a, m[1])
	releaseHold(t, a, release, nil)
	eventually(t, "the holding program's end", 60*time.Second, func() bool {
		return strings.Contains(k.ContainerLog(t, "cuda", "main"), "held=0")
	})
	k.RemoveStaticPod(t, "cuda")
	k.WaitPodGone(t, "cuda", 60*time.Second)
}

// checkSpecCarriesDriver reads the instance's spec in /var/run/cdi: the
// driver's libcuda mount and the nvidia-cdi-hook hooks are there.
func checkSpecCarriesDriver(t *testing.T, uuid string) {
	t.Helper()
	matches, _ := filepath.Glob("/var/run/cdi/*" + uuid + ".json")
	if len(matches) != 1 {
		t.Fatalf("spec files for %s: %v", uuid, matches)
	}
	b, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{`"cdiVersion":"0.5.0"`, "libcuda.so." + simgpu.DriverVersion, "update-ldcache", "create-symlinks", "disable-device-node-modification", simgpu.ContainerStateDir} {
		if !strings.Contains(s, want) {
			t.Errorf("spec lacks %s:\n%s", want, s)
		}
	}
	t.Logf("spec %s: %d bytes", matches[0], len(b))
}

// openFIFO opens the fifo for writing, which returns once the container's
// shell opened it for reading; it fails if the container ends first.
func openFIFO(t *testing.T, path string, done <-chan harness.Result) *os.File {
	t.Helper()
	type res struct {
		f   *os.File
		err error
	}
	ch := make(chan res, 1)
	go func() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		ch <- res{f, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.f
	case r := <-done:
		t.Fatalf("container ended before reading its fifo: %s", r.Combined())
	case <-time.After(60 * time.Second):
		t.Fatal("container never opened its fifo")
	}
	return nil
}
