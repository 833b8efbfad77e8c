package agent

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/migpro/migpro/defaults"
	"github.com/migpro/migpro/plugin"
	"github.com/migpro/migpro/plugin/podresources"
)

// socketed is an Assignments that says which socket it reads (the
// PodResources client); fakes need not.
type socketed interface{ Socket() string }

// assigned asks the kubelet which devices it has assigned. With no kubelet
// on the host (the PodResources socket does not exist: a podman- or
// containerd-only host) nothing is assigned, which is not an error.
func (a *Agent) assigned(ctx context.Context) (map[string]PodRef, error) {
	if a.pods == nil {
		return nil, nil
	}
	m, err := a.pods.AssignedDevices(ctx)
	if errors.Is(err, podresources.ErrNoKubelet) {
		return nil, nil
	}
	return m, err
}

// kubeletSockets are the kubelet's sockets the agent would use: the
// device-plugin registration socket and the PodResources socket, when
// configured.
func (a *Agent) kubeletSockets() (registration, podResources string) {
	if a.cfg.PluginDir != "" {
		registration = filepath.Join(a.cfg.PluginDir, defaults.KubeletSocketName)
	}
	if s, ok := a.pods.(socketed); ok {
		podResources = s.Socket()
	}
	return registration, podResources
}

// kubeletPresent says whether a kubelet has ever run on this host with the
// configured directories: one of its sockets exists.
func (a *Agent) kubeletPresent() bool {
	reg, pr := a.kubeletSockets()
	for _, p := range []string{reg, pr} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// reportKubelet says, in one line, when the agent runs without a kubelet;
// the device plugins still wait for one to appear.
func (a *Agent) reportKubelet() {
	reg, pr := a.kubeletSockets()
	if reg == "" && pr == "" {
		a.log.Info("kubelet integration off (no plugin dir, no PodResources socket): serving the local API only")
		return
	}
	if !a.kubeletPresent() {
		a.log.WithFields(logrus.Fields{"registration_socket": reg, "pod_resources_socket": pr}).
			Info("no kubelet on this host: serving podman and containerd through the local API; the device plugins register if a kubelet starts")
	}
}

// foreignPluginSocket names a live socket in the plugin directory that
// another MIG device plugin serves (its name mentions "mig" and it is not
// one of migpro's), or "".
func (a *Agent) foreignPluginSocket() string {
	if a.cfg.PluginDir == "" {
		return ""
	}
	entries, err := os.ReadDir(a.cfg.PluginDir)
	if err != nil {
		return ""
	}
	for _, e := range entries {
		n := e.Name()
		if e.Type()&os.ModeSocket == 0 || n == defaults.KubeletSocketName || strings.HasPrefix(n, plugin.SocketPrefix) ||
			!strings.Contains(strings.ToLower(n), "mig") {
			continue
		}
		p := filepath.Join(a.cfg.PluginDir, n)
		c, err := net.DialTimeout("unix", p, 200*time.Millisecond)
		if err != nil {
			continue // a stale socket of a plugin that is gone
		}
		c.Close()
		return p
	}
	return ""
}
