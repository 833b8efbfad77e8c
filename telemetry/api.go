package telemetry

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// MaxRequestBytes bounds a registration body.
const MaxRequestBytes = 64 << 10

// Handler serves the agent's telemetry API:
//
//	POST   /v1/containers               register (body: Registration) → 201 Endpoint
//	DELETE /v1/containers/{id}          deregister → 204
//	POST   /v1/containers/{id}/fail-open  the hook let it start without
//	                                    telemetry (body: FailOpen) → 204
//	GET    /v1/containers/{id}/samples  the series → 200 []Reading
//	GET    /v1/top                      → 200 Top
//
// Errors are {"error": "..."} with 400 (bad input), 404, 413, 429 (limit).
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/containers", s.handleRegister)
	mux.HandleFunc("DELETE /v1/containers/{id}", func(w http.ResponseWriter, r *http.Request) {
		if err := s.Deregister(r.PathValue("id")); err != nil {
			writeError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /v1/containers/{id}/fail-open", s.handleFailOpen)
	mux.HandleFunc("GET /v1/containers/{id}/samples", func(w http.ResponseWriter, r *http.Request) {
		smp := s.Samples(r.PathValue("id"))
		if smp == nil {
			writeError(w, fmt.Errorf("%q: %w", r.PathValue("id"), ErrUnknownContainer))
			return
		}
		writeJSON(w, http.StatusOK, smp)
	})
	mux.HandleFunc("GET /v1/top", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, s.Top())
	})
	return mux
}

func (s *Service) handleRegister(w http.ResponseWriter, r *http.Request) {
	var reg Registration
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&reg); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSON(w, http.StatusRequestEntityTooLarge, apiError{fmt.Sprintf("registration larger than %d bytes", MaxRequestBytes)})
			return
		}
		s.st.rejected.Add(1)
		writeJSON(w, http.StatusBadRequest, apiError{"decoding registration: " + err.Error()})
		return
	}
	ep, err := s.Register(reg)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, ep)
}

func (s *Service) handleFailOpen(w http.ResponseWriter, r *http.Request) {
	var f FailOpen
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{"decoding fail-open report: " + err.Error()})
		return
	}
	if err := s.ReportFailOpen(r.PathValue("id"), f.Reason); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

type apiError struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrInvalid):
		code = http.StatusBadRequest
	case errors.Is(err, ErrUnknownContainer):
		code = http.StatusNotFound
	case errors.Is(err, ErrTooManyContainers):
		code = http.StatusTooManyRequests
	}
	writeJSON(w, code, apiError{err.Error()})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
