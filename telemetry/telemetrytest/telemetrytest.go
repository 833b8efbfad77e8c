package telemetrytest

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/migpro/migpro/internal/quietlog"
	"github.com/migpro/migpro/telemetry"
)

// New returns a Service with the pid check off and a logger that says
// nothing, whose state lives in a fresh
// directory under os.TempDir (short, for unix socket paths) removed when tb
// ends. opts come after the defaults, so they may override them.
func New(tb testing.TB, opts ...telemetry.Option) *telemetry.Service {
	s, _ := newIn(tb, opts)
	return s
}

// Serve is New plus the agent's API (Service.Handler) on a unix socket in
// the state directory; it returns the socket's path.
func Serve(tb testing.TB, opts ...telemetry.Option) (*telemetry.Service, string) {
	tb.Helper()
	s, dir := newIn(tb, opts)
	sock := filepath.Join(dir, "agent.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		tb.Fatal(err)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	tb.Cleanup(func() { _ = srv.Close() })
	return s, sock
}

func newIn(tb testing.TB, opts []telemetry.Option) (*telemetry.Service, string) {
	tb.Helper()
	dir, err := os.MkdirTemp("", "tt")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	s, err := telemetry.New(append([]telemetry.Option{telemetry.WithStateDir(dir), telemetry.WithPIDCheck(nil), telemetry.WithLogger(quietlog.New())}, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s, dir
}
