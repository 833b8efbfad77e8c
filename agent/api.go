package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/partitioner"
)

type apiServer struct {
	a   *Agent
	srv *http.Server
	ln  net.Listener
}

func (a *Agent) listenAPI() (*apiServer, error) {
	path := a.cfg.Socket
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("local API socket directory: %w", err)
	}
	if c, err := net.DialTimeout("unix", path, 200*time.Millisecond); err == nil {
		c.Close()
		return nil, fmt.Errorf("local API: another agent is already listening on %s", path)
	}
	os.Remove(path) // a stale socket of a dead agent
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("local API: %w", err)
	}
	if err := os.Chmod(path, 0o660); err != nil {
		ln.Close()
		return nil, fmt.Errorf("local API: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+client.PathAlloc, a.handleAlloc)
	mux.HandleFunc("POST "+client.PathFree, a.handleFree)
	mux.HandleFunc("GET "+client.PathStatus, a.handleStatus)
	mux.HandleFunc("GET "+client.PathProfiles, func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, a.part.Profiles()) })
	a.mountExtraRoutes(mux)
	return &apiServer{a: a, ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout: apiReadTimeout, IdleTimeout: apiIdleTimeout}}, nil
}

func (s *apiServer) serve(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		// ctx has ended: shutdown gets a fresh, bounded context of its own.
		shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = s.srv.Shutdown(shut)
	}()
	err := s.srv.Serve(s.ln)
	os.Remove(s.a.cfg.Socket)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

func (a *Agent) handleAlloc(w http.ResponseWriter, r *http.Request) {
	var req client.AllocRequest
	if err := decodeBody(r, &req); err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	resp, err := a.Alloc(r.Context(), req)
	switch {
	case errors.Is(err, partitioner.ErrUnknownProfile), errors.Is(err, errBadRequest):
		writeErr(w, http.StatusBadRequest, err)
	case errors.Is(err, partitioner.ErrMustWait):
		writeErr(w, http.StatusConflict, err)
	case err != nil:
		writeErr(w, http.StatusInternalServerError, err)
	default:
		writeJSON(w, http.StatusOK, resp)
	}
}

func (a *Agent) handleFree(w http.ResponseWriter, r *http.Request) {
	var req client.FreeRequest
	if err := decodeBody(r, &req); err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	err := a.FreeLease(r.Context(), req.Name, req.Lease)
	switch {
	case errors.Is(err, partitioner.ErrUnknownInstance):
		writeErr(w, http.StatusNotFound, err)
	case errors.Is(err, partitioner.ErrInstanceInUse):
		writeErr(w, http.StatusConflict, err)
	case err != nil:
		writeErr(w, http.StatusInternalServerError, err)
	default:
		writeJSON(w, http.StatusOK, struct{}{})
	}
}

func (a *Agent) handleStatus(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, a.Status())
}

// A request's body must arrive within apiReadTimeout of its start (the API
// takes a few fields), and an idle connection is closed after
// apiIdleTimeout: a caller that opens connections and trickles nothing holds
// no goroutine or descriptor for long. Variables for the tests.
var (
	apiReadTimeout = 10 * time.Second
	apiIdleTimeout = time.Minute
)

// maxBody bounds request bodies: the API only ever takes a few fields.
const maxBody = 64 << 10

func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("bad request body: %w", err)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, client.Error{Error: strings.ReplaceAll(err.Error(), "\n", " ")})
}
