package agent

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/migpro/migpro/client"
)

// A caller that sends a request's head and never its body is cut off: 3,000
// such connections were all still open after 45 s.
func TestLocalAPITimesOutASlowBody(t *testing.T) {
	old := apiReadTimeout
	apiReadTimeout = 500 * time.Millisecond
	t.Cleanup(func() { apiReadTimeout = old })
	e := newEnv(t, "a100-40gb")
	runAgent(t, e.start(t))
	var conns []net.Conn
	for range 20 {
		c, err := net.Dial("unix", e.cfg.Socket)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte("POST /v1/alloc HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n{")); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 512)
		for {
			_, err := c.Read(buf)
			if err == nil {
				continue // an error answer may come first
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("connection %d still open 5 s after its body stalled", i)
			}
			break // closed by the agent
		}
	}
}

// The state directory is root's only, even when something made it 0755
// before the agent started.
func TestStateDirectoryIs0700(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	if err := os.MkdirAll(e.cfg.StateDir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(e.cfg.StateDir, 0o755)
	e.start(t)
	fi, err := os.Stat(e.cfg.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Fatalf("state directory mode %v, want 0700", fi.Mode().Perm())
	}
}

// A checkpoint without holders, or with holders the local API would have
// refused, is corrupt: set aside and logged, never read as "nobody holds
// anything".
func TestCheckpointWithoutValidHoldersIsCorrupt(t *testing.T) {
	for _, body := range []string{
		`{"version":1}`,
		`{"version":1,"holders":null}`,
		`{"version":1,"holders":{"MIG-1":{"owner":"local:a\nlevel=error msg=forged"}}}`,
		`{"version":1,"holders":{"../../etc":{"owner":"local:a"}}}`,
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "checkpoint.json")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := newCheckpointStore(dir)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Load(); !errors.Is(err, errCorruptCheckpoint) {
			t.Errorf("checkpoint %s: %v, want corrupt", strings.ReplaceAll(body, "\n", `\n`), err)
		}
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "checkpoint.json"), []byte(`{"version":1,"holders":{}}`), 0o600)
	c, _ := newCheckpointStore(dir)
	if cp, err := c.Load(); err != nil || len(cp.Holders) != 0 {
		t.Fatalf("an empty checkpoint: %+v %v", cp, err)
	}
}

// A --shim that does not exist is left out of the specs with the hook (a
// spec mounting a missing file fails every container of the instance).
func TestMissingShimLeavesTelemetryOutOfTheSpecs(t *testing.T) {
	for _, shim := range []string{"missing", "present"} {
		e := newEnv(t, "a100-40gb")
		dir := t.TempDir()
		e.cfg.HookPath = filepath.Join(dir, "migpro-hook")
		e.cfg.ShimPath = filepath.Join(dir, "libmigpro-shim.so")
		e.cfg.HookLog = filepath.Join(dir, "hook.log")
		if shim == "present" {
			os.WriteFile(e.cfg.ShimPath, []byte("x"), 0o644)
		}
		c := runAgent(t, e.start(t))
		r, err := c.Alloc(context.Background(), client.AllocRequest{Profile: "1g.5gb"})
		if err != nil {
			t.Fatal(err)
		}
		var spec []byte
		for _, f := range specFiles(t, e.cfg.CDISpecDir) {
			b, _ := os.ReadFile(f)
			if strings.Contains(string(b), r.UUID) {
				spec = b
			}
		}
		if got := strings.Contains(string(spec), e.cfg.ShimPath); got != (shim == "present") {
			t.Errorf("shim %s: spec names it %v:\n%s", shim, got, spec)
		}
		if got := strings.Contains(string(spec), `"--log-file","`+e.cfg.HookLog+`"`) || strings.Contains(string(spec), "- --log-file\n      - "+e.cfg.HookLog); got != (shim == "present") {
			t.Errorf("shim %s: the hook's args carry --log-file %s: %v:\n%s", shim, e.cfg.HookLog, got, spec)
		}
	}
}
