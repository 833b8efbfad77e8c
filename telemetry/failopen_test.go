package telemetry

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
)

// The hook's fail-open report ends the registration, logs one line and
// reaches the subscribers with the registration and a one-line reason.
func TestFailOpenReportEndsRegistrationAndNotifies(t *testing.T) {
	var logs bytes.Buffer
	log := logrus.New()
	log.SetOutput(&logs)
	s := newService(t, WithLogger(log))
	type got struct {
		r      Registration
		reason string
	}
	var seen []got
	s.OnFailOpen(func(r Registration, reason string) { seen = append(seen, got{r, reason}) })
	ended := 0
	s.OnDeregister(func(Registration, uint64) { ended++ })
	h := s.Handler()
	do := func(method, path, body string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
		return rec
	}
	ep, err := s.Register(Registration{ID: "ro", PID: 1, MIGUUIDs: []string{"MIG-1"}, PodNamespace: "team", PodName: "train-0", PodUID: "u-1", ContainerName: "main"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, body string
		code       int
	}{
		{"/v1/containers/ro/fail-open", `{"reason":""}`, http.StatusBadRequest},
		{"/v1/containers/ro/fail-open", `{"reason":"x","extra":1}`, http.StatusBadRequest},
		{"/v1/containers/ro/fail-open", `not json`, http.StatusBadRequest},
		{"/v1/containers/nope/fail-open", `{"reason":"x"}`, http.StatusNotFound},
	} {
		if rec := do("POST", tc.path, tc.body); rec.Code != tc.code {
			t.Errorf("POST %s %s: %d %s, want %d", tc.path, tc.body, rec.Code, rec.Body, tc.code)
		}
	}
	if len(seen) != 0 || len(s.Top().Containers) != 1 {
		t.Fatalf("refused reports changed something: %+v %+v", seen, s.Top())
	}
	reason := "no mount point: mkdir \"/run/migpro\": read-only file system\nforged line" + strings.Repeat("é", 400)
	body, _ := json.Marshal(FailOpen{Reason: reason})
	if rec := do("POST", "/v1/containers/ro/fail-open", string(body)); rec.Code != http.StatusNoContent {
		t.Fatalf("fail-open: %d %s", rec.Code, rec.Body)
	}
	if len(s.Top().Containers) != 0 || ended != 1 {
		t.Errorf("registration kept (%+v) or its end not published (%d)", s.Top(), ended)
	}
	if _, err := os.Stat(ep.Dir); !os.IsNotExist(err) {
		t.Errorf("socket directory %s kept: %v", ep.Dir, err)
	}
	if len(seen) != 1 || seen[0].r.PodName != "train-0" || seen[0].r.ContainerName != "main" {
		t.Fatalf("subscribers saw %+v, want the registration once", seen)
	}
	r := seen[0].reason
	if strings.ContainsAny(r, "\n\r") || len(r) > 512 || !strings.HasPrefix(r, "no mount point") || !strings.Contains(r, "forged line") {
		t.Errorf("reason %q: want one line of at most 512 bytes", r)
	}
	if lines := strings.Split(strings.TrimSpace(logs.String()), "\n"); len(lines) != 1 ||
		!strings.Contains(lines[0], "without telemetry (fail-open)") || !strings.Contains(lines[0], "pod=team/train-0") {
		t.Errorf("log %q: want one line naming the pod", logs.String())
	}
}
