package plugin

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/migpro/migpro/defaults"

	"github.com/migpro/migpro/internal/quietlog"
	"github.com/migpro/migpro/plugin/plugintest"
)

// TestKubeletRestartReRegisters plays a kubelet restart: the old kubelet goes
// away, the new one deletes every plugin socket and creates kubelet.sock. The
// plugin must serve on a fresh socket and register with the new kubelet.
func TestKubeletRestartReRegisters(t *testing.T) {
	dir := shortDir(t)
	old := plugintest.StartKubelet(t, dir, 0)
	inv := newFakeInventory("1g.10gb", "3g.40gb")
	inv.Put("1g.10gb", dev(uuidA, true))
	m, _ := startManager(t, dir, inv)
	for range 2 {
		old.Next(t)
	}

	old.Stop() // removes kubelet.sock
	for _, p := range []string{"migpro-1g.10gb.sock", "migpro-3g.40gb.sock", defaults.KubeletSocketName} {
		_ = os.Remove(filepath.Join(dir, p))
	}
	k := plugintest.StartKubelet(t, dir, 0)
	k.WaitRegistered(t, "nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb")
	eventually(t, "all plugins registered", func() bool {
		for _, s := range m.Status() {
			if !s.Registered || !s.Serving {
				return false
			}
		}
		return true
	})
	// The new kubelet can use the plugin.
	c := dialPlugin(t, filepath.Join(dir, "migpro-1g.10gb.sock"))
	stream, err := c.ListAndWatch(context.Background(), &v1beta1.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	if l := recvList(t, stream); !slices.Equal(l, []string{uuidA + ":Healthy"}) {
		t.Errorf("after restart list = %q", l)
	}
}

// TestKubeletSockRecreated: only kubelet.sock is made again (the plugin
// sockets stay); the fsnotify watch alone must trigger the re-registration.
func TestKubeletSockRecreated(t *testing.T) {
	dir := shortDir(t)
	old := plugintest.StartKubelet(t, dir, 0)
	m, _ := startManager(t, dir, newFakeInventory("1g.10gb", "3g.40gb"))
	old.WaitRegistered(t, "nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb")
	eventually(t, "registered", func() bool {
		st := m.Status()
		return len(st) == 2 && st[0].Registered && st[1].Registered
	})
	old.Stop()
	k := plugintest.StartKubelet(t, dir, 0)
	k.WaitRegistered(t, "nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb")
	for _, s := range []string{"migpro-1g.10gb.sock", "migpro-3g.40gb.sock"} {
		if _, err := dialPlugin(t, filepath.Join(dir, s)).GetDevicePluginOptions(context.Background(), &v1beta1.Empty{}); err != nil {
			t.Errorf("%s does not serve: %v", s, err)
		}
	}
}

// TestPluginDirRecreated: the whole device-plugin directory is deleted and
// made again (as test harnesses do before starting a kubelet); the plugins
// keep watching it and register with the new kubelet.
func TestPluginDirRecreated(t *testing.T) {
	parent := shortDir(t)
	dir := filepath.Join(parent, "dp")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	old := plugintest.StartKubelet(t, dir, 0)
	m, _ := startManager(t, dir, newFakeInventory("1g.5gb"))
	old.Next(t)
	old.Stop()
	// Delete the directory in one step (a plain rm -rf can race with the
	// plugin making its socket again and fail with "directory not empty").
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir + ".old"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "directory made again with the plugin socket", func() bool { return exists(filepath.Join(dir, "migpro-1g.5gb.sock")) })
	k := plugintest.StartKubelet(t, dir, 0)
	k.WaitRegistered(t, "nvidia.com/mig-1g.5gb")
	// The new directory is watched: a kubelet restart alone is seen.
	// Once registered, no registration loop runs any more: only the watch
	// can notice the next kubelet.
	eventually(t, "registered", func() bool { st := m.Status(); return len(st) == 1 && st[0].Registered })
	k.Stop()
	k2 := plugintest.StartKubelet(t, dir, 0)
	k2.WaitRegistered(t, "nvidia.com/mig-1g.5gb")
}

// TestRegistrationRetries: the kubelet refuses the first attempts, and the
// plugin keeps trying with backoff until it is accepted.
func TestRegistrationRetries(t *testing.T) {
	dir := shortDir(t)
	k := plugintest.StartKubelet(t, dir, 3)
	m, _ := startManager(t, dir, newFakeInventory("1g.5gb"))
	k.Next(t)
	if n := k.Attempts(); n != 4 {
		t.Errorf("kubelet saw %d attempts, want 4 (3 refused + 1)", n)
	}
	eventually(t, "status registered", func() bool {
		st := m.Status()
		return len(st) == 1 && st[0].Registered && st[0].Attempts == 4 && st[0].LastError == ""
	})
}

// TestStaleKubeletSocket: kubelet.sock exists but nobody listens
// ("connection refused"); the plugin retries, reports why, and registers once
// a kubelet listens there.
func TestStaleKubeletSocket(t *testing.T) {
	dir := shortDir(t)
	l, err := net.Listen("unix", filepath.Join(dir, defaults.KubeletSocketName))
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close() // the socket file stays: stale
	m, _ := startManager(t, dir, newFakeInventory("1g.5gb"))
	eventually(t, "a refused registration", func() bool {
		st := m.Status()
		return len(st) == 1 && st[0].Attempts >= 2 && strings.Contains(st[0].LastError, "connection refused")
	})
	if err := os.Remove(filepath.Join(dir, defaults.KubeletSocketName)); err != nil {
		t.Fatal(err)
	}
	k := plugintest.StartKubelet(t, dir, 0)
	if r := k.Next(t); r.ResourceName != "nvidia.com/mig-1g.5gb" {
		t.Errorf("registration %+v", r)
	}
}

// TestProfilesChange: servers follow the inventory's profiles.
func TestProfilesChange(t *testing.T) {
	dir := shortDir(t)
	k := plugintest.StartKubelet(t, dir, 0)
	inv := newFakeInventory("1g.10gb")
	m, _ := startManager(t, dir, inv, WithDomain("example.org"))
	if r := k.Next(t); r.ResourceName != "example.org/mig-1g.10gb" {
		t.Fatalf("registration %+v", r)
	}
	inv.SetProfiles("2g.20gb", "1g.10gb+me")
	k.WaitRegistered(t, "example.org/mig-1g.10gb.me", "example.org/mig-2g.20gb")
	eventually(t, "old socket removed", func() bool { return !exists(filepath.Join(dir, "migpro-1g.10gb.sock")) })
	if want := []string{"example.org/mig-1g.10gb.me", "example.org/mig-2g.20gb"}; !slices.Equal(m.Resources(), want) {
		t.Errorf("Resources = %q, want %q", m.Resources(), want)
	}
	for _, s := range []string{"migpro-2g.20gb.sock", "migpro-1g.10gb.me.sock"} {
		if !exists(filepath.Join(dir, s)) {
			t.Errorf("socket %s missing", s)
		}
	}
}

// TestPluginSocketDeleted: a deleted plugin socket is made again and
// registered again.
func TestPluginSocketDeleted(t *testing.T) {
	dir := shortDir(t)
	k := plugintest.StartKubelet(t, dir, 0)
	startManager(t, dir, newFakeInventory("1g.5gb"))
	k.Next(t)
	sock := filepath.Join(dir, "migpro-1g.5gb.sock")
	if err := os.Remove(sock); err != nil {
		t.Fatal(err)
	}
	k.Next(t)
	if !exists(sock) {
		t.Fatal("socket not made again")
	}
	if _, err := dialPlugin(t, sock).GetDevicePluginOptions(context.Background(), &v1beta1.Empty{}); err != nil {
		t.Errorf("new socket does not serve: %v", err)
	}
}

// TestStopRemovesSockets: ending Run stops the servers and removes their
// sockets, and leaves kubelet.sock alone.
func TestStopRemovesSockets(t *testing.T) {
	dir := shortDir(t)
	k := plugintest.StartKubelet(t, dir, 0)
	_, stop := startManager(t, dir, newFakeInventory("1g.5gb", "7g.80gb"))
	k.Next(t)
	k.Next(t)
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{defaults.KubeletSocketName}) {
		t.Errorf("after stop the dir holds %q, want only kubelet.sock", names)
	}
}

func TestRunTwiceRefused(t *testing.T) {
	dir := shortDir(t)
	m, _ := startManager(t, dir, newFakeInventory("1g.5gb"))
	eventually(t, "serving", func() bool { st := m.Status(); return len(st) == 1 && st[0].Serving })
	if err := m.Run(context.Background()); err == nil {
		t.Error("second Run accepted")
	}
}

func TestNewManagerRejectsBadConfig(t *testing.T) {
	inv := newFakeInventory()
	for name, opts := range map[string][]Option{
		"empty dir":    {WithPluginDir("")},
		"empty domain": {WithDomain("")},
		"bad domain":   {WithDomain("Nvidia.com/x")},
		"bad backoff":  {WithRegisterBackoff(0, 0)},
	} {
		if _, err := NewManager(inv, append([]Option{WithLogger(quietlog.New())}, opts...)...); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	if _, err := NewManager(inv, WithPluginDir(t.TempDir())); err == nil {
		t.Error("no logger accepted")
	}
	if _, err := NewManager(nil); err == nil {
		t.Error("nil inventory accepted")
	}
}
