package telemetry

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandlerRoutes(t *testing.T) {
	s := newService(t, WithMaxContainers(1))
	h := s.Handler()
	do := func(method, path, body string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
		return rec
	}
	rec := do("POST", "/v1/containers", `{"id":"abc","pid":1,"migUUIDs":["MIG-1"],"podNamespace":"ns","podName":"p","podUID":"u-1","containerName":"c"}`)
	if rec.Code != http.StatusCreated {
		t.Fatalf("register: %d %s", rec.Code, rec.Body)
	}
	var ep Endpoint
	if err := json.Unmarshal(rec.Body.Bytes(), &ep); err != nil || ep.ID != "abc" || !strings.HasSuffix(ep.Socket, "/containers/abc/telemetry.sock") {
		t.Fatalf("endpoint %s: %v", rec.Body, err)
	}
	for _, tc := range []struct {
		body string
		code int
	}{
		{`{"id":"../x"}`, http.StatusBadRequest},
		{`{"id":"x","extra":1}`, http.StatusBadRequest},
		{`not json`, http.StatusBadRequest},
		{`{"id":"other"}`, http.StatusTooManyRequests},
		{`{"id":"` + strings.Repeat("a", MaxRequestBytes) + `"}`, http.StatusRequestEntityTooLarge},
	} {
		if rec := do("POST", "/v1/containers", tc.body); rec.Code != tc.code || !strings.Contains(rec.Body.String(), `"error"`) {
			t.Errorf("POST %.40s: %d %s, want %d", tc.body, rec.Code, rec.Body, tc.code)
		}
	}
	rec = do("GET", "/v1/top", "")
	var top Top
	if err := json.Unmarshal(rec.Body.Bytes(), &top); err != nil || len(top.Containers) != 1 || top.Containers[0].PodUID != "u-1" {
		t.Fatalf("top %s: %v", rec.Body, err)
	}
	if rec := do("GET", "/v1/containers/abc/samples", ""); rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != "[]" {
		t.Errorf("samples: %d %s", rec.Code, rec.Body)
	}
	if rec := do("GET", "/v1/containers/nope/samples", ""); rec.Code != http.StatusNotFound {
		t.Errorf("unknown samples: %d", rec.Code)
	}
	if rec := do("DELETE", "/v1/containers/abc", ""); rec.Code != http.StatusNoContent {
		t.Errorf("delete: %d %s", rec.Code, rec.Body)
	}
	if rec := do("DELETE", "/v1/containers/abc", ""); rec.Code != http.StatusNotFound {
		t.Errorf("second delete: %d", rec.Code)
	}
	if rec := do("GET", "/v1/containers", ""); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET collection: %d", rec.Code)
	}
}
