package hook

import (
	"bufio"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/migpro/migpro/telemetry/telemetrytest"
)

// fakeContainer starts a process in a private mount namespace, standing in
// for runc's init between mount set-up and pivot_root: its namespace sees
// the rootfs at the same path as the host.
func fakeContainer(t testing.TB) int {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mount namespaces need root")
	}
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatalf("unshare: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	self, _ := os.Readlink("/proc/" + strconv.Itoa(hostWitness(t)) + "/ns/mnt")
	deadline := time.Now().Add(5 * time.Second)
	for { // wait until unshare has exec'd sleep in the new namespace
		ns, _ := os.Readlink("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/ns/mnt")
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/comm")
		if ns != "" && ns != self && strings.TrimSpace(string(comm)) == "sleep" {
			return cmd.Process.Pid
		}
		if time.Now().After(deadline) {
			t.Fatal("fake container did not start")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// injectPlanted lays out a rootfs with plant and injects the telemetry
// mounts into it from a fake container's mount namespace; it returns the
// container, the rootfs and what Inject said.
func injectPlanted(t *testing.T, plant func(rootfs string) error) (pid int, rootfs string, err error) {
	t.Helper()
	pid = fakeContainer(t)
	rootfs = t.TempDir()
	if err := plant(rootfs); err != nil {
		t.Fatal(err)
	}
	return pid, rootfs, Inject(Injection{NSPath: "/proc/" + strconv.Itoa(pid) + "/ns/mnt", Rootfs: rootfs, SocketDir: t.TempDir()})
}

// hostWitness is a process that stays in the host's mount namespace.
func hostWitness(t testing.TB) int {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatalf("sleep: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

// mountsUnder lists mount points of pid's namespace under prefix, with
// their mount options.
func mountsUnder(t testing.TB, pid int, prefix string) map[string]string {
	t.Helper()
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 5 && (f[4] == prefix || strings.HasPrefix(f[4], prefix+"/")) {
			out[f[4]] = f[5]
		}
	}
	return out
}

func snapshotDir(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestInjectMountsSocketDirReadOnly(t *testing.T) {
	pid := fakeContainer(t)
	_, sock := telemetrytest.Serve(t)
	_ = sock
	rootfs := t.TempDir()
	sockDir := t.TempDir()
	// A real datagram socket in the host dir must be usable through the
	// read-only bind inside the container.
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: filepath.Join(sockDir, "telemetry.sock"), Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	shim := filepath.Join(t.TempDir(), "shim.so")
	os.WriteFile(shim, []byte("shim-bytes"), 0o644)

	err = Inject(Injection{NSPath: "/proc/" + strconv.Itoa(pid) + "/ns/mnt", Rootfs: rootfs, SocketDir: sockDir, ShimHostPath: shim})
	if err != nil {
		t.Fatalf("Inject: %v", err)
	}
	m := mountsUnder(t, pid, rootfs)
	for _, p := range []string{rootfs + ContainerDir, rootfs + ContainerShim} {
		if opts, ok := m[p]; !ok || !strings.HasPrefix(opts, "ro,") {
			t.Errorf("mount %s: %q (all: %v)", p, opts, m)
		}
	}
	// Another host process witnesses the host namespace: this process's
	// own /proc/self view may be the container's, because the thread the
	// hook retires in the container's namespace can be the main thread.
	if leaked := mountsUnder(t, hostWitness(t), rootfs); len(leaked) != 0 {
		t.Errorf("mounts leaked into the host namespace: %v", leaked)
	}
	// Seen from inside: the shim's bytes, and a socket that takes datagrams.
	inside := "/proc/" + strconv.Itoa(pid) + "/root" + rootfs
	if b, err := os.ReadFile(inside + ContainerShim); err != nil || string(b) != "shim-bytes" {
		t.Errorf("shim inside: %q %v", b, err)
	}
	if err := os.WriteFile(inside+ContainerDir+"/x", nil, 0o644); err == nil || !errors.Is(err, unix.EROFS) {
		t.Errorf("socket dir is writable from inside: %v", err)
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: inside + ContainerSocket, Net: "unixgram"})
	if err != nil {
		t.Fatalf("dial through the bind: %v", err)
	}
	c.Write([]byte("hello"))
	c.Close()
	buf := make([]byte, 16)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := conn.Read(buf); err != nil || string(buf[:n]) != "hello" {
		t.Errorf("datagram through the bind: %q %v", buf[:n], err)
	}
}

// A rootfs that plants symlinks where the hook mounts gets a clear error and
// nothing is written or mounted outside it, or over what the link names.
func TestInjectRefusesHostileSymlinks(t *testing.T) {
	etcBefore := snapshotDir(t, "/etc")
	for name, plant := range map[string]func(rootfs string) error{
		"run/migpro -> /etc": func(r string) error {
			os.MkdirAll(filepath.Join(r, "run"), 0o755)
			return os.Symlink("/etc", filepath.Join(r, "run/migpro"))
		},
		"run -> ../../../../../../etc": func(r string) error {
			return os.Symlink("../../../../../../etc", filepath.Join(r, "run"))
		},
		"usr/lib/migpro -> /etc": func(r string) error {
			os.MkdirAll(filepath.Join(r, "usr/lib"), 0o755)
			return os.Symlink("/etc", filepath.Join(r, "usr/lib/migpro"))
		},
		"shim file -> /etc/passwd": func(r string) error {
			os.MkdirAll(filepath.Join(r, "usr/lib/migpro"), 0o755)
			return os.Symlink("/etc/passwd", filepath.Join(r, "usr/lib/migpro/libmigpro-shim.so"))
		},
	} {
		t.Run(name, func(t *testing.T) {
			pid := fakeContainer(t)
			rootfs := t.TempDir()
			if err := plant(rootfs); err != nil {
				t.Fatal(err)
			}
			shim := filepath.Join(t.TempDir(), "shim.so")
			os.WriteFile(shim, []byte("x"), 0o644)
			err := Inject(Injection{NSPath: "/proc/" + strconv.Itoa(pid) + "/ns/mnt", Rootfs: rootfs, SocketDir: t.TempDir(), ShimHostPath: shim})
			if !errors.Is(err, ErrUnsafeRootfs) {
				t.Fatalf("Inject = %v, want ErrUnsafeRootfs", err)
			}
			if m := mountsUnder(t, pid, "/etc"); len(m) != 0 {
				t.Errorf("mounted over host paths: %v", m)
			}
			if m := mountsUnder(t, pid, rootfs); len(m) != 0 {
				t.Errorf("mounted despite refusal: %v", m)
			}
		})
	}
	if after := snapshotDir(t, "/etc"); strings.Join(after, "\n") != strings.Join(etcBefore, "\n") {
		t.Errorf("/etc changed: before %d entries, after %d", len(etcBefore), len(after))
	}
}
