package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/migpro/migpro/telemetry/telemetryapi"
	"github.com/migpro/migpro/telemetry/telemetrytest"
)

// The hardening findings through the built binary, as a runtime runs it.

func TestBinaryReadOnlyRootfsFailsOpen(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for mounts")
	}
	bin := hookBinary(t)
	s, sock := telemetrytest.Serve(t)
	var reported []string
	s.OnFailOpen(func(r telemetryapi.Registration, reason string) { reported = append(reported, r.ID+": "+reason) })
	rootfs := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", rootfs).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", rootfs).Run() })
	bundle := t.TempDir()
	os.WriteFile(filepath.Join(bundle, "config.json"), []byte(`{"root":{"path":"`+rootfs+`"},"process":{"env":["NVIDIA_VISIBLE_DEVICES=MIG-1"]}}`), 0o600)
	ctr := exec.Command("unshare", "--mount", "--propagation", "private", "sleep", "60")
	if err := ctr.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctr.Process.Kill(); ctr.Wait() })
	waitExec(t, ctr.Process.Pid)
	logf := filepath.Join(t.TempDir(), "hook.log")
	h := exec.Command(bin, "--agent-socket", sock, "--log-file", logf)
	h.Stdin = strings.NewReader(fmt.Sprintf(`{"ociVersion":"1.0.2","id":"ro","status":"creating","pid":%d,"bundle":%q}`, ctr.Process.Pid, bundle))
	out, err := h.CombinedOutput()
	if err != nil {
		t.Fatalf("hook on a read-only rootfs: %v %s, want exit 0 (fail-open)", err, out)
	}
	b, _ := os.ReadFile(logf)
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "without telemetry") || !strings.Contains(lines[0], "read-only") {
		t.Fatalf("log %q: want one line", b)
	}
	if len(s.Top().Containers) != 0 {
		t.Fatal("registration left behind")
	}
	// The agent was told, so it can log it and record an Event on the pod.
	if len(reported) != 1 || !strings.HasPrefix(reported[0], "ro: ") || !strings.Contains(reported[0], "read-only") {
		t.Fatalf("fail-open reports %q, want one for ro naming the read-only file system", reported)
	}
}

func TestBinaryRefusesSmuggledIDAndKeepsItsDeadline(t *testing.T) {
	bin := hookBinary(t)
	s, sock := telemetrytest.Serve(t)
	if _, err := s.Register(telemetryapi.Registration{ID: "victim", PID: os.Getpid(), MIGUUIDs: []string{"MIG-1"}}); err != nil {
		t.Fatal(err)
	}
	h := exec.Command(bin, "--agent-socket", sock, "poststop")
	h.Stdin = strings.NewReader(`{"id":"x HTTP/1.1\r\nHost: a\r\n\r\nDELETE /v1/containers/victim","bundle":"/b","status":"stopped"}`)
	out, _ := h.CombinedOutput()
	if len(s.Top().Containers) != 1 {
		t.Fatalf("a smuggled request deregistered another container (hook said %s)", out)
	}
	if strings.Count(strings.TrimSpace(string(out)), "\n") != 0 || !strings.Contains(string(out), "container id") {
		t.Fatalf("want one line naming the bad id, got %q", out)
	}

	trickle := filepath.Join(t.TempDir(), "t.sock")
	l, err := net.Listen("unix", trickle)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.Read(make([]byte, 4096))
				for range 2000 {
					if _, err := c.Write([]byte("H")); err != nil {
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
			}()
		}
	}()
	h = exec.Command(bin, "--agent-socket", trickle, "--timeout", "500ms", "poststop")
	h.Stdin = strings.NewReader(`{"id":"c1","bundle":"/b","status":"stopped"}`)
	start := time.Now()
	h.CombinedOutput()
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("--timeout 500ms took %v against a trickling agent", d)
	}
}
