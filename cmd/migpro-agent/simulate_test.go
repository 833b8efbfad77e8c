package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"
	specs "tags.cncf.io/container-device-interface/specs-go"

	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/gpu/simgpu/simdrivertest"
)

var (
	stubsOnce sync.Once
	stubsDir  string
	stubsErr  error
)

// stubs builds the simulated driver's stubs once for the package's tests.
func stubs(t *testing.T) string {
	t.Helper()
	stubsOnce.Do(func() {
		var d string
		if d, stubsErr = os.MkdirTemp("", "migpro-agent-stubs-"); stubsErr == nil {
			var s simdrivertest.Stubs
			s, stubsErr = simdrivertest.Build(d)
			stubsDir = s.Dir
		}
	})
	if stubsErr != nil {
		t.Fatal(stubsErr)
	}
	return stubsDir
}

// simNode is a directory for one simulated node's agent, kept across its
// starts.
type simNode struct {
	dir string
}

func newSimNode(t *testing.T) simNode {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the simulated GPU's device nodes need root")
	}
	return simNode{dir: t.TempDir()}
}

func (n simNode) socket() string  { return filepath.Join(n.dir, "a.sock") }
func (n simNode) simRoot() string { return filepath.Join(n.dir, "sim") }
func (n simNode) cdiDir() string  { return filepath.Join(n.dir, "cdi") }

// args are migpro-agent's flags for this node, then extra.
func (n simNode) args(extra ...string) []string {
	return append([]string{"--simulate", "a100-40gb", "--sim-root", n.simRoot(), "--state-dir", filepath.Join(n.dir, "state"),
		"--socket", n.socket(), "--cdi-dir", n.cdiDir(), "--plugin-dir", "", "--pod-resources", "", "--telemetry-dir", "off",
		"--metrics-addr", "", "--nvidia-cdi-hook-path", "/opt/test/nvidia-cdi-hook", "--log-level", "error"}, extra...)
}

// agentRun is migpro-agent's entry point running in the test's process.
type agentRun struct {
	stop func()
	done chan error
}

// start runs migpro-agent with args until the test stops it, and waits for
// its local API.
func (n simNode) start(t *testing.T, args []string) *agentRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &agentRun{stop: cancel, done: make(chan error, 1)}
	go func() { r.done <- run(ctx, args) }()
	t.Cleanup(func() { r.end(t) })
	c := client.New(n.socket())
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case err := <-r.done:
			r.done <- err
			t.Fatalf("migpro-agent ended at start: %v", err)
		default:
		}
		if _, err := c.Status(context.Background()); err == nil {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatal("migpro-agent's local API never answered")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// end stops the agent and returns what run returned (once).
func (r *agentRun) end(t *testing.T) error {
	t.Helper()
	r.stop()
	select {
	case err, ok := <-r.done:
		if ok {
			close(r.done)
		}
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("migpro-agent did not stop")
		return nil
	}
}

func (n simNode) alloc(t *testing.T, owner string) client.AllocResponse {
	t.Helper()
	resp, err := client.New(n.socket()).Alloc(context.Background(), client.AllocRequest{Profile: "1g.5gb", Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// spec reads the instance's spec file as a runtime does.
func (n simNode) spec(t *testing.T, uuid string) *cdiapi.Spec {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(n.cdiDir(), "*"+uuid+".json"))
	if len(m) != 1 {
		t.Fatalf("spec files for %s: %v", uuid, m)
	}
	s, err := cdiapi.ReadSpec(m[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// mounts maps the spec's driver mounts, container path to host path.
func mounts(s *cdiapi.Spec) map[string]string {
	out := map[string]string{}
	for _, m := range s.ContainerEdits.Mounts {
		out[m.ContainerPath] = m.HostPath
	}
	return out
}

const libDir = "/" + simgpu.LibDir + "/"

// checkDriver checks the spec carries the simulated driver of version from
// driverRoot: libcuda.so.<version>, libnvidia-ml and nvidia-smi, each a file
// there.
func checkDriver(t *testing.T, s *cdiapi.Spec, driverRoot, version string) {
	t.Helper()
	m := mounts(s)
	for _, p := range []string{libDir + "libcuda.so." + version, libDir + "libnvidia-ml.so." + version, "/usr/bin/nvidia-smi"} {
		host, ok := m[p]
		if !ok {
			t.Errorf("spec does not mount %s; mounts %v", p, m)
			continue
		}
		if host != filepath.Join(driverRoot, p) {
			t.Errorf("%s mounted from %s, want %s", p, host, filepath.Join(driverRoot, p))
		}
		if fi, err := os.Stat(host); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s: %v", host, err)
		}
	}
}

// migpro-agent --simulate installs the simulated driver under the simulated
// node's root and its specs carry it, with no manual step; with
// --driver-root, under that root.
func TestSimulateInstallsTheDriver(t *testing.T) {
	n := newSimNode(t)
	n.start(t, n.args("--sim-driver", stubs(t)))
	in := n.alloc(t, "me")
	checkDriver(t, n.spec(t, in.UUID), n.simRoot(), simgpu.DriverVersion)

	n2 := newSimNode(t)
	root := filepath.Join(n2.dir, "driver")
	n2.start(t, n2.args("--sim-driver", stubs(t), "--driver-root", root))
	in = n2.alloc(t, "me")
	checkDriver(t, n2.spec(t, in.UUID), root, simgpu.DriverVersion)
}

// --sim-driver: "auto" finds the stubs next to the executable (as `make
// build` lays them out), "off" installs nothing, a directory without the
// stubs is refused in one line.
func TestSimDriverFlag(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := resolveSimDriver("off"); got != "" || err != nil {
		t.Errorf("off: %q %v", got, err)
	}
	empty := t.TempDir()
	if _, err := resolveSimDriver(empty); err == nil || !strings.Contains(err.Error(), "--sim-driver") || strings.Contains(err.Error(), "make ") || strings.Contains(err.Error(), "\n") {
		t.Errorf("--sim-driver with no stubs: %v", err)
	}
	next := filepath.Join(filepath.Dir(exe), "simdriver")
	if _, err := os.Stat(next); err == nil {
		t.Fatalf("%s exists already", next)
	}
	if got, err := resolveSimDriver(simDriverAuto); got != "" || err != nil {
		t.Errorf("auto with no stubs anywhere: %q %v", got, err)
	}
	if err := os.Symlink(stubs(t), next); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(next)
	if got, err := resolveSimDriver(simDriverAuto); got != next || err != nil {
		t.Errorf("auto with stubs at %s: %q %v", next, got, err)
	}
	n := newSimNode(t)
	err = run(context.Background(), n.args("--sim-driver", empty))
	if err == nil || !strings.Contains(err.Error(), "--sim-driver") {
		t.Errorf("migpro-agent --sim-driver %s: %v", empty, err)
	}
}

// --dev-root: every device node in the spec, the driver's control nodes and
// the instance's own, is taken from <dev-root>/dev.
func TestDevRootNamesTheDeviceNodes(t *testing.T) {
	n := newSimNode(t)
	devRoot := filepath.Join(n.dir, "devroot")
	if err := os.MkdirAll(devRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	// The simulated nodes are made under the sim root; the dev root shows
	// them through a link, as a host's /dev mounted elsewhere would.
	if err := os.Symlink(filepath.Join(n.simRoot(), "dev"), filepath.Join(devRoot, "dev")); err != nil {
		t.Fatal(err)
	}
	n.start(t, n.args("--sim-driver", stubs(t), "--dev-root", devRoot))
	in := n.alloc(t, "me")
	s := n.spec(t, in.UUID)
	nodes := append(append([]string(nil), hostPaths(s.ContainerEdits.DeviceNodes)...), hostPaths(s.Devices[0].ContainerEdits.DeviceNodes)...)
	if len(nodes) != 6 {
		t.Fatalf("spec has device nodes %v, want 6", nodes)
	}
	for _, p := range nodes {
		if !strings.HasPrefix(p, devRoot+"/dev/") {
			t.Errorf("device node %s is not under the dev root %s", p, devRoot)
		}
	}
	for _, want := range []string{"nvidiactl", "nvidia0"} {
		if !slices.Contains(nodes, filepath.Join(devRoot, "dev", want)) {
			t.Errorf("device nodes %v lack %s", nodes, want)
		}
	}
}

func hostPaths(nodes []*specs.DeviceNode) []string {
	var out []string
	for _, d := range nodes {
		h := d.HostPath
		if h == "" {
			h = d.Path
		}
		out = append(out, h)
	}
	return out
}

// A driver upgrade between two starts: the specs on disk are rewritten with
// the new version's libraries, under the same CDI name, and an instance in
// use stays in use with its spec.
func TestRestartAfterDriverUpgrade(t *testing.T) {
	const newVersion = "580.65.06"
	n := newSimNode(t)
	a := n.start(t, n.args("--sim-driver", stubs(t)))
	in := n.alloc(t, "job-1")
	checkDriver(t, n.spec(t, in.UUID), n.simRoot(), simgpu.DriverVersion)
	if err := a.end(t); err != nil {
		t.Fatal(err)
	}

	n.start(t, n.args("--sim-driver", stubs(t), "--sim-driver-version", newVersion))
	s := n.spec(t, in.UUID)
	checkDriver(t, s, n.simRoot(), newVersion)
	for c := range mounts(s) {
		if strings.Contains(c, simgpu.DriverVersion) {
			t.Errorf("upgraded spec still mounts %s", c)
		}
	}
	if got := s.Kind + "=" + s.Devices[0].Name; got != in.CDIName {
		t.Errorf("CDI name after the upgrade %s, before %s", got, in.CDIName)
	}
	st, err := client.New(n.socket()).Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var kept bool
	for _, i := range st.Instances {
		kept = kept || (i.UUID == in.UUID && i.State == client.StateInUse && i.Owner == "local:job-1" && i.CDIName == in.CDIName)
	}
	if !kept {
		t.Errorf("instance %s is not in use by job-1 after the restart: %+v", in.UUID, st.Instances)
	}
}

// The driver's files are gone at a restart while the specs on disk carry
// it: the agent refuses to start, in one line naming the driver root, and
// leaves the specs as they were.
func TestRestartWithoutTheDriverRefuses(t *testing.T) {
	n := newSimNode(t)
	a := n.start(t, n.args("--sim-driver", stubs(t)))
	in := n.alloc(t, "job-1")
	if err := a.end(t); err != nil {
		t.Fatal(err)
	}
	m, _ := filepath.Glob(filepath.Join(n.cdiDir(), "*"+in.UUID+".json"))
	if len(m) != 1 {
		t.Fatalf("spec files %v", m)
	}
	before, err := os.ReadFile(m[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(n.simRoot(), "usr")); err != nil {
		t.Fatal(err)
	}
	err = run(context.Background(), n.args("--sim-driver", "off"))
	if err == nil || !strings.Contains(err.Error(), "refusing to start") || !strings.Contains(err.Error(), n.simRoot()) ||
		strings.Contains(err.Error(), "\n") {
		t.Fatalf("restart without the driver: %v", err)
	}
	after, err := os.ReadFile(m[0])
	if err != nil || string(after) != string(before) {
		t.Errorf("spec changed by the refused start (%v):\n%s\nwas:\n%s", err, after, before)
	}
}
