package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/migpro/migpro/client"
)

// serve answers the local API's paths with fixed error answers on a unix
// socket, as an agent would.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return sock
}

func TestErrorAnswers(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+client.PathFree, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":"free MIG-x: no such instance"}`))
	})
	mux.HandleFunc("POST "+client.PathAlloc, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusConflict)
		w.Write([]byte(`{"error":"alloc 7g.40gb: must wait"}`))
	})
	mux.HandleFunc("GET "+client.PathStatus, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error":"bad owner"}`))
	})
	c := client.New(serve(t, mux))
	ctx := context.Background()

	err := c.Free(ctx, "MIG-x")
	if !errors.Is(err, client.ErrUnknownInstance) || err.Error() != "free MIG-x: no such instance" {
		t.Errorf("Free: %q (unknown instance: %v), want the agent's line once", err, errors.Is(err, client.ErrUnknownInstance))
	}
	_, err = c.Alloc(ctx, client.AllocRequest{Profile: "7g.40gb"})
	if !errors.Is(err, client.ErrConflict) || err.Error() != "alloc 7g.40gb: must wait" {
		t.Errorf("Alloc: %q, want a conflict that reads as the agent's line", err)
	}
	_, err = c.Status(ctx)
	var bad *client.BadRequestError
	if !errors.As(err, &bad) || bad.Msg != "bad owner" {
		t.Errorf("Status: %v, want a BadRequestError", err)
	}
}

func TestUnreachableSaysWhy(t *testing.T) {
	dir := t.TempDir()
	_, err := client.New(filepath.Join(dir, "none.sock")).Status(context.Background())
	if err == nil || !strings.Contains(err.Error(), "is it running?") {
		t.Errorf("missing socket: %v, want a hint that the agent is not running", err)
	}

	// An agent that accepts but never answers: the deadline is named.
	sock := filepath.Join(dir, "slow.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = client.New(sock).Status(ctx)
	if err == nil || !strings.Contains(err.Error(), "did not answer in time") {
		t.Errorf("silent agent: %v, want a deadline line", err)
	}
}
