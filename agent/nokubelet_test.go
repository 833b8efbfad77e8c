package agent

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/partitioner"
	"github.com/migpro/migpro/plugin/podresources"
)

// On a podman- or containerd-only host the kubelet's sockets do not exist:
// the agent, with its default wiring (a real PodResources client, a plugin
// dir), says so once, and alloc and free work through the local API.
func TestNoKubeletAllocAndFreeWithDefaults(t *testing.T) {
	dir := shortTemp(t)
	e := newEnv(t, "a100-40gb")
	e.cfg.PluginDir = filepath.Join(dir, "device-plugins")
	pr, err := podresources.New(podresources.WithSocket(filepath.Join(dir, "pod-resources", "kubelet.sock")))
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	log, hook := test.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	a, err := New(e.cfg, GPU{Node: e.node}, WithAssignments(pr), WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	c := runAgent(t, a)
	ctx := context.Background()
	r, err := c.Alloc(ctx, client.AllocRequest{Profile: "1g.5gb"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Free(ctx, r.CDIName); err != nil {
		t.Fatalf("free with no kubelet: %v", err)
	}
	if _, err := a.part.Find(r.UUID); err == nil {
		t.Fatalf("%s still exists after free", r.UUID)
	}
	said, warned := 0, 0
	for _, en := range hook.AllEntries() {
		if strings.Contains(en.Message, "no kubelet") {
			said++
		}
		// Any warning about the kubelet's absence is one line too many.
		if line, _ := en.String(); en.Level <= logrus.WarnLevel && (strings.Contains(line, "kubelet") || strings.Contains(line, "PodResources")) {
			warned++
			t.Errorf("warning with no kubelet: %s %v", en.Message, en.Data)
		}
	}
	if said != 1 {
		t.Fatalf("%d lines say there is no kubelet, want exactly 1", said)
	}
}

func TestCleanupDestroysIdleRemovesSpecsKeepsInUse(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	a := e.start(t)
	ctx := context.Background()
	held, err := a.Alloc(ctx, client.AllocRequest{Profile: "2g.10gb", Owner: "job"})
	if err != nil {
		t.Fatal(err)
	}
	idle, err := a.Alloc(ctx, client.AllocRequest{Profile: "1g.5gb"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.part.Release(idle.UUID); err != nil {
		t.Fatal(err)
	}
	if n := len(specFiles(t, e.cfg.CDISpecDir)); n != 2 {
		t.Fatalf("%d specs before cleanup, want 2", n)
	}
	rep, err := a.Cleanup(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Destroyed) != 1 || rep.Destroyed[0] != idle.UUID {
		t.Fatalf("destroyed %v, want only the idle %s", rep.Destroyed, idle.UUID)
	}
	if len(rep.Left) != 1 || rep.Left[0].UUID != held.UUID {
		t.Fatalf("left %v, want the in-use %s", rep.Left, held.UUID)
	}
	if got := specFiles(t, e.cfg.CDISpecDir); len(got) != 0 || rep.SpecsRemoved != 1 {
		t.Fatalf("specs after cleanup %v (removed %d), want none", got, rep.SpecsRemoved)
	}
	insts, err := e.node.Devices()[0].Instances()
	if err != nil || len(insts) != 1 || insts[0].UUID != held.UUID {
		t.Fatalf("driver instances after cleanup %+v %v, want only %s", insts, err, held.UUID)
	}
	if in, _ := a.part.Find(held.UUID); in.State != partitioner.InUse {
		t.Fatalf("held instance is %s", in.State)
	}
}

// An uninstall (--cleanup-on-exit, Run ending) reports each instance left
// in use, by UUID and owner, and sums up in one line.
func TestCleanupOnExitReportsInstancesLeftInUse(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	e.cfg.CleanupOnExit = true
	log, hook := test.NewNullLogger()
	a, err := New(e.cfg, GPU{Node: e.node}, WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	c := client.New(e.cfg.Socket)
	waitFor(t, "local API", func() bool { _, err := c.Status(ctx); return err == nil })
	held, err := c.Alloc(ctx, client.AllocRequest{Profile: "2g.10gb", Owner: "trainer"})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var left, summary int
	for _, en := range hook.AllEntries() {
		switch {
		case strings.Contains(en.Message, "instance in use, left in place"):
			left++
			if en.Level != logrus.WarnLevel || en.Data["uuid"] != held.UUID || en.Data["owner"] != "local:trainer" {
				t.Errorf("left-in-use line: %s %v", en.Level, en.Data)
			}
		case en.Message == "cleanup done":
			summary++
			if en.Data["left_in_use"] != 1 || en.Data["specs_removed"] != 1 {
				t.Errorf("summary line: %v", en.Data)
			}
		}
	}
	if left != 1 || summary != 1 {
		t.Fatalf("%d left-in-use lines and %d summaries, want 1 and 1", left, summary)
	}
}

// --cleanup-on-exit: Run ending (SIGTERM in the binary) does the cleanup.
func TestRunCleansUpOnExitWhenAsked(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	e.cfg.CleanupOnExit = true
	a := e.start(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	c := client.New(e.cfg.Socket)
	waitFor(t, "local API", func() bool { _, err := c.Status(ctx); return err == nil })
	r, err := c.Alloc(ctx, client.AllocRequest{Profile: "3g.20gb"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.part.Release(r.UUID); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := specFiles(t, e.cfg.CDISpecDir); len(got) != 0 {
		t.Fatalf("specs left after exit: %v", got)
	}
	if insts, _ := e.node.Devices()[0].Instances(); len(insts) != 0 {
		t.Fatalf("instances left after exit: %+v", insts)
	}
}

// A live socket of another MIG plugin in the plugin dir: Run refuses to
// start in one line; a stale one (nothing listening) is not in the way.
func TestRunRefusesBesideAForeignMIGPluginSocket(t *testing.T) {
	dir := shortTemp(t)
	stale := filepath.Join(dir, "nvidia-mig-old.sock")
	ln, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	e := newEnv(t, "a100-40gb")
	e.cfg.PluginDir = dir
	live, err := net.Listen("unix", filepath.Join(dir, "nvidia-mig-1g.5gb.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	err = e.start(t).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "nvidia-mig-1g.5gb.sock") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Run: %v, want one line naming the foreign socket", err)
	}
	live.Close()
	e2 := newEnv(t, "a100-40gb")
	e2.cfg.PluginDir = dir
	runAgent(t, e2.start(t)) // only the stale socket is left: it starts
}
