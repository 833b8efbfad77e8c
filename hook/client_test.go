package hook

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/migpro/migpro/telemetry/telemetryapi"
	"github.com/migpro/migpro/telemetry/telemetrytest"
)

func TestClientRegisterDeregister(t *testing.T) {
	s, sock := telemetrytest.Serve(t)
	c := Client{Socket: sock, Timeout: time.Second}
	ep, err := c.Register(telemetryapi.Registration{ID: "c1", PID: 1, MIGUUIDs: []string{"MIG-1"}, PodName: "p"})
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	if fi, err := os.Stat(ep.Socket); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("endpoint %+v: %v", ep, err)
	}
	if top := s.Top(); len(top.Containers) != 1 || top.Containers[0].PodName != "p" {
		t.Fatalf("agent state %+v", top)
	}
	_, err = c.Register(telemetryapi.Registration{ID: "../evil"})
	if !errors.Is(err, ErrAgent) || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "container id") {
		t.Fatalf("bad registration: %v", err)
	}
	if err := c.Deregister("c1"); err != nil {
		t.Fatalf("Deregister: %v", err)
	}
	if err := c.Deregister("c1"); err != nil {
		t.Fatalf("Deregister of unknown id must be fine: %v", err)
	}
	if len(s.Top().Containers) != 0 {
		t.Fatal("still registered")
	}
}

func TestClientAgentDownOrHung(t *testing.T) {
	dir := t.TempDir()
	c := Client{Socket: filepath.Join(dir, "none.sock"), Timeout: 200 * time.Millisecond}
	if _, err := c.Register(telemetryapi.Registration{ID: "a"}); !errors.Is(err, ErrAgent) {
		t.Fatalf("no agent: %v", err)
	}
	// An agent that accepts and never answers must not hang the hook.
	hung := filepath.Join(dir, "hung.sock")
	l, err := net.Listen("unix", hung)
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
			defer conn.Close()
		}
	}()
	c.Socket = hung
	start := time.Now()
	if _, err := c.Register(telemetryapi.Registration{ID: "a"}); !errors.Is(err, ErrAgent) {
		t.Fatalf("hung agent: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("hung agent held the hook for %v", d)
	}
}

func TestParseResponse(t *testing.T) {
	code, body, err := parseResponse([]byte("HTTP/1.0 201 Created\r\nContent-Length: 2\r\n\r\n{}extra"))
	if err != nil || code != 201 || string(body) != "{}" {
		t.Fatalf("= %d %q %v", code, body, err)
	}
	for _, bad := range []string{"", "HTTP/1.0 201", "SPDY 200\r\n\r\n", "HTTP/1.1 abc\r\n\r\n", "HTTP/1.1 200\r\nContent-Length: 9\r\n\r\nab", "HTTP/1.1 99\r\n\r\n"} {
		if _, _, err := parseResponse([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
