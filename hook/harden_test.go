package hook

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/migpro/migpro/telemetry/telemetryapi"
	"github.com/migpro/migpro/telemetry/telemetrytest"
)

// TestPoststopIDCannotSmuggleARequest: a poststop id with CR/LF once carried
// a second HTTP request that deregistered another container.
func TestPoststopIDCannotSmuggleARequest(t *testing.T) {
	s, sock := telemetrytest.Serve(t)
	c := Client{Socket: sock, Timeout: time.Second}
	if _, err := c.Register(telemetryapi.Registration{ID: "victim", PID: os.Getpid(), MIGUUIDs: []string{"MIG-1"}}); err != nil {
		t.Fatal(err)
	}
	evil := "x HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\nDELETE /v1/containers/victim"
	_, err := Run(Config{AgentSocket: sock}, stateJSON(evil, 0, "/b", "stopped"))
	if !errors.Is(err, ErrBadInput) {
		t.Fatalf("poststop with a CR/LF id: %v, want ErrBadInput", err)
	}
	if err := c.Deregister(evil); !errors.Is(err, ErrBadInput) {
		t.Fatalf("Deregister of a CR/LF id: %v, want ErrBadInput", err)
	}
	if top := s.Top(); len(top.Containers) != 1 || top.Containers[0].ID != "victim" {
		t.Fatalf("the other container's registration: %+v", top.Containers)
	}
	for _, id := range []string{"a/b", "..", "a b", "ä", "a\x00", strings.Repeat("a", maxIDLen+1)} {
		if err := ValidID(id); !errors.Is(err, ErrBadInput) {
			t.Errorf("ValidID(%q) = %v", id, err)
		}
	}
	for _, id := range []string{"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "ctr_1.a+b-c"} {
		if err := ValidID(id); err != nil {
			t.Errorf("ValidID(%q) = %v", id, err)
		}
	}
}

// TestTimeoutIsOneDeadline: an agent that trickles its answer one byte at a
// time once held a 2s hook for 38s (each read had its own timeout).
func TestTimeoutIsOneDeadline(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "trickle.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				buf := make([]byte, 4096)
				conn.Read(buf)
				for i := 0; i < 1000; i++ {
					if _, err := conn.Write([]byte("H")); err != nil {
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
			}()
		}
	}()
	start := time.Now()
	_, err = Client{Socket: sock, Timeout: 300 * time.Millisecond}.Register(telemetryapi.Registration{ID: "a"})
	if !errors.Is(err, ErrAgent) {
		t.Fatalf("trickling agent: %v", err)
	}
	// A timeout per read would let the trickle run for 50 s; 5 s leaves
	// room for a loaded machine.
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("a 300ms timeout took %v against a trickling agent", d)
	}
}

// TestInjectRefusesHostNamespaceAndRootSlash: a state pid in the host's
// mount namespace with a root of / once made the hook mount over the host's
// /run/migpro.
func TestInjectRefusesHostNamespaceAndRootSlash(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounts need root")
	}
	sockDir := t.TempDir()
	host := hostWitness(t)
	rootfs := t.TempDir()
	err := Inject(Injection{NSPath: "/proc/" + strconv.Itoa(host) + "/ns/mnt", Rootfs: rootfs, SocketDir: sockDir})
	if err == nil {
		exec.Command("umount", filepath.Join(rootfs, "run/migpro")).Run()
	}
	if !errors.Is(err, ErrUnsafeRootfs) || !strings.Contains(err.Error(), "host") {
		t.Fatalf("host namespace: %v, want a refusal", err)
	}
	pid := fakeContainer(t)
	err = Inject(Injection{NSPath: "/proc/" + strconv.Itoa(pid) + "/ns/mnt", Rootfs: "/", SocketDir: sockDir})
	if !errors.Is(err, ErrUnsafeRootfs) {
		t.Fatalf("rootfs /: %v, want a refusal", err)
	}
	if m := mountsUnder(t, pid, "/run/migpro"); len(m) != 0 {
		t.Fatalf("mounted over / in the container's namespace: %v", m)
	}
}

// TestSymlinkTargetCannotForgeALogLine: a symlink target with a newline was
// logged raw.
func TestSymlinkTargetCannotForgeALogLine(t *testing.T) {
	pid := fakeContainer(t)
	rootfs := t.TempDir()
	os.MkdirAll(filepath.Join(rootfs, "run"), 0o755)
	os.Symlink("/nowhere\nmigpro-hook: forged line", filepath.Join(rootfs, "run", "migpro"))
	_, sock := telemetrytest.Serve(t)
	_, err := Run(Config{AgentSocket: sock}, stateJSON("c", pid, bundleFor(t, rootfs, "NVIDIA_VISIBLE_DEVICES=MIG-1"), "creating"))
	if !errors.Is(err, ErrUnsafeRootfs) {
		t.Fatalf("Run = %v, want a refusal", err)
	}
	if strings.ContainsAny(err.Error(), "\n\r") {
		t.Fatalf("error carries a raw line break: %q", err.Error())
	}
}

// TestOrdinaryRootfsFailuresFailOpen: a read-only rootfs (EROFS, podman run
// --read-only), a full one (ENOSPC) and one the hook may not write (EPERM,
// an immutable directory) are not attacks: the container starts without
// telemetry, with one log line naming the cause, and the agent keeps no
// registration. With FailClosed each is refused as ErrNoMountPoint.
func TestOrdinaryRootfsFailuresFailOpen(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounts need root")
	}
	for _, tc := range []struct {
		name, opts string
		prepare    func(t *testing.T, rootfs string)
		cause      string
	}{
		{"read-only", "ro,size=1m", nil, "read-only file system"},
		// The root directory is the only inode: nothing more can be made.
		{"full", "size=1m,nr_inodes=1", nil, "no space left on device"},
		{"immutable", "size=1m", func(t *testing.T, rootfs string) {
			if out, err := exec.Command("chattr", "+i", rootfs).CombinedOutput(); err != nil {
				t.Fatalf("chattr +i: %v %s", err, out)
			}
			t.Cleanup(func() { exec.Command("chattr", "-i", rootfs).Run() })
		}, "operation not permitted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, sock := telemetrytest.Serve(t)
			rootfs := t.TempDir()
			if out, err := exec.Command("mount", "-t", "tmpfs", "-o", tc.opts, "tmpfs", rootfs).CombinedOutput(); err != nil {
				t.Fatalf("mount: %v %s", err, out)
			}
			t.Cleanup(func() { exec.Command("umount", rootfs).Run() })
			if tc.prepare != nil {
				tc.prepare(t, rootfs)
			}
			pid := fakeContainer(t)
			bundle := bundleFor(t, rootfs, "NVIDIA_VISIBLE_DEVICES=MIG-1")
			var logs []string
			cfg := Config{AgentSocket: sock, Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }}
			res, err := Run(cfg, stateJSON("c0", pid, bundle, "creating"))
			if err != nil || res.Skipped != "fail-open" || res.Injected {
				t.Fatalf("%s rootfs: %+v %v, want fail-open", tc.name, res, err)
			}
			if len(logs) != 1 || !strings.Contains(logs[0], "without telemetry") || !strings.Contains(logs[0], tc.cause) {
				t.Fatalf("want one line saying it starts without telemetry because of %q, got %q", tc.cause, logs)
			}
			if len(s.Top().Containers) != 0 {
				t.Fatal("registration left behind")
			}
			cfg.FailClosed = true
			if _, err := Run(cfg, stateJSON("c0", pid, bundle, "creating")); !errors.Is(err, ErrNoMountPoint) {
				t.Fatalf("fail-closed on a %s rootfs: %v", tc.name, err)
			}
		})
	}
}
