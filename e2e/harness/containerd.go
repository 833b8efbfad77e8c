package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/api/types/runc/options"
	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/pkg/namespaces"
)

// RuncPath is the Debian runc every engine here uses (crun cannot run on
// these hybrid-cgroup hosts).
const RuncPath = "/usr/sbin/runc"

// Containerd is a private containerd v2 daemon: its own root, state, socket
// and config, so tests never touch a system containerd. Shim sockets still
// go to /run/containerd/s (fixed in containerd).
type Containerd struct {
	// Dir holds everything: config.toml, root/, state/, runc/, the socket
	// and containerd.log.
	Dir string
	// Socket is the absolute gRPC socket path (ctr -a Socket).
	Socket string
	// RuncRoot is the private runc state directory.
	RuncRoot string
	// Client is connected to Socket; closed at cleanup.
	Client *client.Client

	d          *daemon
	cgroupsPre map[string]bool
}

// ContainerdOption changes how StartContainerd configures the daemon.
type ContainerdOption func(*containerdConfig)

type containerdConfig struct {
	cdiSpecDirs []string
}

// WithCDISpecDirs sets the CRI plugin's cdi_spec_dirs (what the kubelet path
// reads); default /etc/cdi and /var/run/cdi. The Go client and ctr read CDI
// specs on the client side: see ConfigureCDI.
func WithCDISpecDirs(dirs ...string) ContainerdOption {
	return func(c *containerdConfig) { c.cdiSpecDirs = dirs }
}

// StartContainerd starts a private containerd built by `make e2e-deps`, waits
// until its socket answers, and stops it at cleanup: every task and
// container in every namespace is removed, leftover shims of this daemon are
// killed, mounts under Dir are unmounted and Dir is removed.
func StartContainerd(t testing.TB, opts ...ContainerdOption) *Containerd {
	t.Helper()
	RequireRoot(t)
	cfg := containerdConfig{cdiSpecDirs: []string{"/etc/cdi", "/var/run/cdi"}}
	for _, o := range opts {
		o(&cfg)
	}
	bin := Bin(t, "containerd")
	Bin(t, "containerd-shim-runc-v2")
	sweepStaleContainerd(t)

	dir := tempDir(t, "containerd")
	c := &Containerd{Dir: dir, Socket: filepath.Join(dir, "containerd.sock"), RuncRoot: filepath.Join(dir, "runc"),
		cgroupsPre: topCgroups()}
	conf := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(conf, []byte(containerdTOML(dir, c.Socket, c.RuncRoot, cfg)), 0o644); err != nil {
		t.Fatalf("write containerd config: %v", err)
	}
	if err := writeCNIConfig(dir); err != nil {
		t.Fatalf("write CNI config: %v", err)
	}
	logPath := filepath.Join(dir, "containerd.log")
	// The shim is found on PATH; put ours first.
	env := []string{"PATH=" + filepath.Dir(bin) + ":" + os.Getenv("PATH")}
	d, err := startDaemon("containerd", logPath, env, bin, "--config", conf)
	if err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	c.d = d
	t.Cleanup(func() { c.stop(t) })

	deadline := time.Now().Add(30 * time.Second)
	for {
		if d.exited() {
			t.Fatalf("containerd exited during start-up: %v\n%s", d.err, tail(logPath, 30))
		}
		if cl, err := tryClient(c.Socket); err == nil {
			c.Client = cl
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("containerd socket %s did not answer within 30s: %v\n%s", c.Socket, err, tail(logPath, 30))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("containerd started: socket %s, log %s", c.Socket, logPath)
	return c
}

func tryClient(sock string) (*client.Client, error) {
	if _, err := os.Stat(sock); err != nil {
		return nil, err
	}
	cl, err := client.New(sock, client.WithTimeout(2*time.Second))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := cl.Version(ctx); err != nil {
		cl.Close()
		return nil, err
	}
	return cl, nil
}

func containerdTOML(dir, sock, runcRoot string, cfg containerdConfig) string {
	q := func(ss []string) string {
		var out []string
		for _, s := range ss {
			out = append(out, strconv.Quote(s))
		}
		return "[" + strings.Join(out, ", ") + "]"
	}
	return fmt.Sprintf(`# Written by the migpro e2e harness.
version = 3
root = %[1]q
state = %[2]q

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[plugins]
  [plugins.'io.containerd.internal.v1.opt']
    path = %[5]q
  [plugins.'io.containerd.nri.v1.nri']
    disable = true
  [plugins.'io.containerd.grpc.v1.cri']
    disable_tcp_service = true
    stream_server_address = '127.0.0.1'
    stream_server_port = '0'
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = %[6]q
  [plugins.'io.containerd.cri.v1.runtime']
    cdi_spec_dirs = %[7]s
    restrict_oom_score_adj = true
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ['/usr/lib/cni']
      conf_dir = %[10]q
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = %[8]q
          Root = %[9]q
          SystemdCgroup = false
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), sock, sock+".ttrpc",
		filepath.Join(dir, "opt"), PauseImageName, q(cfg.cdiSpecDirs), RuncPath, runcRoot, filepath.Join(dir, "cni"))
}

// writeCNIConfig writes a bridge network in dir/cni, so the CRI plugin
// reports NetworkReady (a cluster node is Ready only then). Test pods use
// hostNetwork, so nothing is ever attached to it.
func writeCNIConfig(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "cni"), 0o755); err != nil {
		return err
	}
	conf := fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "migpro-e2e",
  "plugins": [
    {"type": "bridge", "bridge": "mige2e0", "isGateway": true, "ipMasq": false,
     "ipam": {"type": "host-local", "dataDir": %q,
              "ranges": [[{"subnet": "10.244.77.0/24"}]]}}
  ]
}
`, filepath.Join(dir, "cni-ipam"))
	return os.WriteFile(filepath.Join(dir, "cni", "10-migpro-e2e.conflist"), []byte(conf), 0o644)
}

// Context returns a background context in namespace ns.
func (c *Containerd) Context(ns string) context.Context {
	return namespaces.WithNamespace(context.Background(), ns)
}

// RuntimeOpt makes a Go-client container use Debian runc with the private
// runc root: pass it to Client.NewContainer.
func (c *Containerd) RuntimeOpt() client.NewContainerOpts {
	return client.WithRuntime("io.containerd.runc.v2", &options.Options{BinaryName: RuncPath, Root: c.RuncRoot})
}

// CtrRunFlags are the `ctr run` flags that select Debian runc and the private
// runc root.
func (c *Containerd) CtrRunFlags() []string {
	return []string{"--runc-binary", RuncPath, "--runc-root", c.RuncRoot}
}

// Ctr runs `ctr -a Socket args...` (for example "-n", "ns", "run", ...).
func (c *Containerd) Ctr(t testing.TB, args ...string) Result {
	t.Helper()
	start := time.Now()
	r := runCmd(2*time.Minute, nil, Bin(t, "ctr"), append([]string{"-a", c.Socket}, args...)...)
	t.Logf("ctr %v: exit %d in %v", args, r.ExitCode, time.Since(start).Round(time.Millisecond))
	return r
}

// ImportArchive imports an OCI archive (WriteOCIArchive, PauseImage,
// BusyboxImage) into namespace ns and unpacks it for the overlayfs
// snapshotter. The image is named by its io.containerd.image.name annotation.
func (c *Containerd) ImportArchive(t testing.TB, ns, path string) []images.Image {
	t.Helper()
	ctx, cancel := context.WithTimeout(c.Context(ns), time.Minute)
	defer cancel()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open image archive: %v", err)
	}
	defer f.Close()
	imgs, err := c.Client.Import(ctx, f)
	if err != nil {
		t.Fatalf("import %s into %s: %v", path, ns, err)
	}
	for _, im := range imgs {
		if err := client.NewImage(c.Client, im).Unpack(ctx, "overlayfs"); err != nil {
			t.Fatalf("unpack %s: %v", im.Name, err)
		}
	}
	return imgs
}
