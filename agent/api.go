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

	"github.com/migpro/migpro/partitioner"
)

// The local API: JSON over HTTP on a unix socket, for migctl and for podman
// and containerd users who have no kubelet.
const (
	pathAlloc    = "/v1/alloc"
	pathFree     = "/v1/free"
	pathStatus   = "/v1/status"
	pathProfiles = "/v1/profiles"
)

// AllocRequest asks for an instance of a profile.
type AllocRequest struct {
	Profile string `json:"profile"`
	// Owner labels the holder in status pictures (default "local").
	Owner string `json:"owner,omitempty"`
}

// AllocResponse is the instance given, with the name to pass to
// `podman run --device` or containerd's WithCDIDevices.
type AllocResponse struct {
	UUID    string `json:"uuid"`
	CDIName string `json:"cdiName"`
	Profile string `json:"profile"`
	GPU     int    `json:"gpu"`
	Start   int    `json:"start"`
	Size    int    `json:"size"`
	Steps   int    `json:"steps"` // NVML creates and destroys it took
}

// FreeRequest releases and destroys an instance, named by its CDI name or
// MIG UUID.
type FreeRequest struct {
	Name string `json:"name"`
}

// Status is the whole node: GPUs with their reachability, and instances.
type Status struct {
	GPUs      []partitioner.GPU `json:"gpus"`
	Instances []StatusInstance  `json:"instances"`
}

// StatusInstance is one instance as status shows it.
type StatusInstance struct {
	partitioner.Instance
	CDIName string `json:"cdiName,omitempty"`
	Healthy bool   `json:"healthy"`
	Pod     string `json:"pod,omitempty"`
}

// apiError is the body of every error answer: one line for the user.
type apiError struct {
	Error string `json:"error"`
}

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
	mux.HandleFunc("POST "+pathAlloc, a.handleAlloc)
	mux.HandleFunc("POST "+pathFree, a.handleFree)
	mux.HandleFunc("GET "+pathStatus, a.handleStatus)
	mux.HandleFunc("GET "+pathProfiles, func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, a.part.Profiles()) })
	a.mountExtraRoutes(mux)
	return &apiServer{a: a, ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}}, nil
}

func (s *apiServer) serve(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.srv.Shutdown(shut)
	}()
	err := s.srv.Serve(s.ln)
	os.Remove(s.a.cfg.Socket)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

func (a *Agent) handleAlloc(w http.ResponseWriter, r *http.Request) {
	var req AllocRequest
	if err := decodeBody(r, &req); err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	resp, err := a.Alloc(r.Context(), req)
	switch {
	case errors.Is(err, partitioner.ErrUnknownProfile):
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
	var req FreeRequest
	if err := decodeBody(r, &req); err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	err := a.Free(r.Context(), req.Name)
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
	writeJSON(w, code, apiError{Error: strings.ReplaceAll(err.Error(), "\n", " ")})
}
