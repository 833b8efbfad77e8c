package harness

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Fixed kubelet paths: the device-plugin directory does not follow
// --root-dir.
const (
	DevicePluginDir = "/var/lib/kubelet/device-plugins"
	KubeletSocket   = DevicePluginDir + "/kubelet.sock"
)

// kubeletLock serialises kubelets on this machine (port 10250 and the
// device-plugin directory are global), also across test processes.
const kubeletLock = "/run/migpro-e2e-kubelet.lock"

// sysctls the kubelet sets at start; restored at cleanup.
var kubeletSysctls = []string{"vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops"}

// KubeletOptions configures StartKubelet.
type KubeletOptions struct {
	// Containerd is the runtime (required; from StartContainerd).
	Containerd *Containerd
	// NodeName is the node's name, default "migpro-e2e". Static pods show up
	// as "<pod>-<NodeName>".
	NodeName string
	// Cluster, when set, joins the kubelet to that control plane as node
	// NodeName (registered, serving on Cluster.NodeIP). Without it the
	// kubelet runs standalone on 127.0.0.1.
	Cluster *Cluster
	// ExtraConfig is appended to the KubeletConfiguration YAML (top-level
	// keys, e.g. "featureGates:\n  Foo: true\n").
	ExtraConfig string
}

// Kubelet is a standalone kubelet v1.32 (no API server) on a private root
// directory, running static pods through Containerd.
type Kubelet struct {
	Dir          string // everything: config, root/, manifests/, logs/
	RootDir      string // --root-dir
	StaticPodDir string // staticPodPath
	PodLogsDir   string // podLogsDir
	ConfigPath   string
	NodeName     string
	Containerd   *Containerd
	// Address is where the kubelet serves (port 10250): 127.0.0.1, or the
	// cluster's NodeIP.
	Address string
	// Kubeconfig is the node's kubeconfig in cluster mode, else "".
	Kubeconfig string

	bin        string
	logPath    string
	d          *daemon
	sysctls    map[string]string
	hadVarLogC bool
	cgroupsPre map[string]bool
	clusterCA  string
}

// StartKubelet starts a standalone kubelet per docs/e2e.md and waits until
// it serves https://<Address>:10250 and has created KubeletSocket. Before
// starting it clears DevicePluginDir (a stale kubelet.sock makes plugins
// race) and imports the pause image into the "k8s.io" namespace. Cleanup
// stops it, removes its pods' containers, and undoes its side effects: the
// sysctls, the bind mount of RootDir, /var/log/containers links, and the
// kubepods cgroups.
func StartKubelet(t testing.TB, opts KubeletOptions) *Kubelet {
	t.Helper()
	RequireRoot(t)
	if opts.Containerd == nil {
		t.Fatal("StartKubelet: KubeletOptions.Containerd is required")
	}
	if opts.NodeName == "" {
		opts.NodeName = "migpro-e2e"
	}
	bin := Bin(t, "kubelet")
	lock := lockFile(t, kubeletLock)
	t.Cleanup(func() { lock.Close() }) // releases the flock, after k.cleanup
	sweepStaleKubelet(t)

	dir := tempDir(t, "kubelet")
	k := &Kubelet{
		Dir: dir, RootDir: filepath.Join(dir, "root"), StaticPodDir: filepath.Join(dir, "manifests"),
		PodLogsDir: filepath.Join(dir, "pod-logs"), ConfigPath: filepath.Join(dir, "config.yaml"),
		NodeName: opts.NodeName, Containerd: opts.Containerd, bin: bin,
		logPath: filepath.Join(dir, "kubelet.log"), Address: "127.0.0.1",
	}
	if opts.Cluster != nil {
		k.Address = opts.Cluster.NodeIP
		k.Kubeconfig = opts.Cluster.UserKubeconfig(t, "node-"+k.NodeName, "system:node:"+k.NodeName, "system:nodes")
		k.clusterCA = opts.Cluster.CAFile
	}
	for _, d := range []string{k.RootDir, k.StaticPodDir, k.PodLogsDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(k.ConfigPath, []byte(k.configYAML(opts.ExtraConfig)), 0o644); err != nil {
		t.Fatalf("write kubelet config: %v", err)
	}
	k.recordSideEffects()
	if err := saveKubeletSysctls(k.sysctls); err != nil {
		t.Fatalf("save sysctls: %v", err)
	}
	t.Cleanup(func() { k.cleanup(t) })

	if err := clearDir(DevicePluginDir); err != nil {
		t.Fatalf("clear %s: %v", DevicePluginDir, err)
	}
	opts.Containerd.ImportArchive(t, "k8s.io", PauseImage(t))
	k.start(t)
	return k
}

func (k *Kubelet) configYAML(extra string) string {
	register := "registerNode: false\n"
	if k.Kubeconfig != "" {
		register = "registerNode: true\n"
	}
	x509 := ""
	if k.clusterCA != "" {
		x509 = fmt.Sprintf("  x509:\n    clientCAFile: %q\n", k.clusterCA)
	}
	return fmt.Sprintf(`# Written by the migpro e2e harness.
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %q
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
%s
authorization:
  mode: AlwaysAllow
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
# Kubernetes 1.35+ refuses cgroup v1 hosts unless told otherwise; the test
# machines are hybrid (v1 controllers).
failCgroupV1: false
evictionHard: {}
staticPodPath: %q
fileCheckFrequency: 1s
syncFrequency: 5s
containerRuntimeEndpoint: %q
podLogsDir: %q
volumePluginDir: %q
%s%s`, k.Address, x509, k.StaticPodDir, "unix://"+k.Containerd.Socket, k.PodLogsDir,
		filepath.Join(k.Dir, "volume-plugins"), register, extra)
}

// start runs the kubelet and waits until it is ready.
func (k *Kubelet) start(t testing.TB) {
	t.Helper()
	start := time.Now()
	// On a restart the old kubelet.sock may still be there: wait for a new one.
	// (Inodes are reused at once, so compare the change time too.)
	var old *syscall.Stat_t
	if fi, err := os.Stat(KubeletSocket); err == nil {
		old = fi.Sys().(*syscall.Stat_t)
	}
	args := []string{"--config", k.ConfigPath, "--root-dir", k.RootDir, "--cert-dir", filepath.Join(k.Dir, "pki"),
		"--hostname-override", k.NodeName, "--v=2"}
	if k.Kubeconfig != "" {
		args = append(args, "--kubeconfig", k.Kubeconfig, "--node-ip", k.Address)
	}
	d, err := startDaemon("kubelet", k.logPath, nil, k.bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	k.d = d
	deadline := time.Now().Add(60 * time.Second)
	for {
		if d.exited() {
			t.Fatalf("kubelet exited during start-up: %v\n%s", d.err, tail(k.logPath, 40))
		}
		fi, sockErr := os.Stat(KubeletSocket)
		if st, ok := statOf(fi); sockErr == nil && ok && old != nil && st.Ino == old.Ino && st.Ctim == old.Ctim {
			sockErr = fmt.Errorf("%s not recreated yet", KubeletSocket)
		}
		_, podsErr := k.Pods()
		if sockErr == nil && podsErr == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubelet not ready within 60s (socket: %v, /pods: %v)\n%s", sockErr, podsErr, tail(k.logPath, 40))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("kubelet ready in %v: root %s, log %s", time.Since(start).Round(time.Millisecond), k.RootDir, k.logPath)
}

func statOf(fi os.FileInfo) (*syscall.Stat_t, bool) {
	if fi == nil {
		return nil, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return st, ok
}

// Restart stops the kubelet (SIGTERM) and starts it again with the same
// configuration; running pods stay. The device-plugin directory is not
// cleared, as on a real restart: kubelet.sock is recreated and plugins must
// re-register.
func (k *Kubelet) Restart(t testing.TB) {
	t.Helper()
	if err := k.d.stop(20 * time.Second); err != nil {
		t.Fatalf("stop kubelet: %v", err)
	}
	k.start(t)
}

// PodResourcesSocket is the kubelet's PodResources API socket.
func (k *Kubelet) PodResourcesSocket() string {
	return filepath.Join(k.RootDir, "pod-resources", "kubelet.sock")
}

// Log returns the kubelet's log so far.
func (k *Kubelet) Log() string {
	b, _ := os.ReadFile(k.logPath)
	return string(b)
}

func (k *Kubelet) recordSideEffects() {
	k.sysctls = map[string]string{}
	for _, s := range kubeletSysctls {
		if b, err := os.ReadFile("/proc/sys/" + s); err == nil {
			k.sysctls[s] = strings.TrimSpace(string(b))
		}
	}
	_, err := os.Stat("/var/log/containers")
	k.hadVarLogC = err == nil
	k.cgroupsPre = map[string]bool{}
	for _, p := range kubepodsCgroups() {
		k.cgroupsPre[p] = true
	}
}

func (k *Kubelet) cleanup(t testing.TB) {
	start := time.Now()
	defer func() { t.Logf("kubelet torn down in %v", time.Since(start).Round(time.Millisecond)) }()
	if k.d != nil {
		if err := k.d.stop(20 * time.Second); err != nil {
			t.Errorf("stop kubelet: %v", err)
		}
	}
	KeepLog(t, "kubelet", k.logPath)
	// The kubelet is gone, so remove what it left running in containerd.
	if k.Containerd.Client != nil {
		k.Containerd.RemoveContainers(t, "k8s.io")
	}
	for s, v := range k.sysctls {
		if err := os.WriteFile("/proc/sys/"+s, []byte(v), 0o644); err != nil {
			t.Errorf("restore sysctl %s=%s: %v", s, v, err)
		}
	}
	os.Remove(kubeletSysctlFile)
	if err := unmountUnder(k.Dir); err != nil {
		t.Errorf("unmount under %s: %v", k.Dir, err)
	}
	k.cleanVarLogContainers(t)
	for _, p := range kubepodsCgroups() {
		if !k.cgroupsPre[p] {
			rmdirTree(t, p)
		}
	}
	if err := clearDir(DevicePluginDir); err != nil {
		t.Errorf("clear %s: %v", DevicePluginDir, err)
	}
	if err := os.RemoveAll(k.Dir); err != nil {
		t.Errorf("remove %s: %v", k.Dir, err)
	}
}

// cleanVarLogContainers removes the kubelet's links into PodLogsDir, and the
// directory itself if it did not exist before.
func (k *Kubelet) cleanVarLogContainers(t testing.TB) {
	ents, _ := os.ReadDir("/var/log/containers")
	for _, e := range ents {
		p := filepath.Join("/var/log/containers", e.Name())
		if dst, err := os.Readlink(p); err == nil && strings.HasPrefix(dst, k.PodLogsDir+"/") {
			os.Remove(p)
		}
	}
	if !k.hadVarLogC {
		os.Remove("/var/log/containers") // only if empty
	}
}

// kubepodsCgroups lists the kubepods cgroup directories in every v1
// hierarchy.
func kubepodsCgroups() []string {
	var out []string
	for _, pat := range []string{"/sys/fs/cgroup/*/kubepods*", "/sys/fs/cgroup/kubepods*"} {
		m, _ := filepath.Glob(pat)
		out = append(out, m...)
	}
	return out
}

// topCgroups returns the set of top-level cgroup directories in every v1
// hierarchy, e.g. /sys/fs/cgroup/memory/k8s.io.
func topCgroups() map[string]bool {
	m, _ := filepath.Glob("/sys/fs/cgroup/*/*")
	set := map[string]bool{}
	for _, p := range m {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			set[p] = true
		}
	}
	return set
}

// rmdirTree removes an empty cgroup directory tree, deepest first. A cgroup
// still in use (by another test's containers) stays.
func rmdirTree(t testing.TB, root string) {
	var dirs []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := syscall.Rmdir(dirs[i]); err != nil {
			t.Logf("rmdir cgroup %s: %v", dirs[i], err)
		}
	}
}

// clearDir removes everything inside dir, creating it if missing.
func clearDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// lockFile takes an exclusive flock on path, waiting up to 15 minutes for
// another test process to release it. Closing the file releases it.
func lockFile(t testing.TB, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatalf("open lock %s: %v", path, err)
	}
	deadline := time.Now().Add(15 * time.Minute)
	logged := false
	for syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		if !logged {
			t.Logf("waiting for %s (another kubelet test is running)", path)
			logged = true
		}
		if time.Now().After(deadline) {
			f.Close()
			t.Fatalf("lock %s still held after 15 min", path)
		}
		time.Sleep(500 * time.Millisecond)
	}
	return f
}

var insecureClient = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
	TLSClientConfig: insecureTLS(),
}}
