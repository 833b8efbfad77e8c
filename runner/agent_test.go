package runner

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/predictor"
)

// serveAgent serves h on a unix socket, as the agent's local API does.
func serveAgent(t *testing.T, h http.Handler) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "runner")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close(); os.RemoveAll(dir) })
	return sock
}

func TestAgentClientAgainstTheLocalAPI(t *testing.T) {
	mux := http.NewServeMux()
	var freed []string
	mux.HandleFunc("GET /v1/profiles", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode([]string{"1g.5gb", "1g.10gb", "7g.40gb"})
	})
	mux.HandleFunc("POST /v1/alloc", func(w http.ResponseWriter, r *http.Request) {
		var req client.AllocRequest
		json.NewDecoder(r.Body).Decode(&req)
		if req.Profile != "1g.5gb" {
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]string{"error": req.Profile + ": no GPU on this node offers the profile (offered: [1g.5gb 1g.10gb 7g.40gb])"})
			return
		}
		json.NewEncoder(w).Encode(client.AllocResponse{UUID: "MIG-1", CDIName: "k/mig=MIG-1", Profile: req.Profile + "|" + req.Owner})
	})
	mux.HandleFunc("POST /v1/free", func(w http.ResponseWriter, r *http.Request) {
		var req client.FreeRequest
		json.NewDecoder(r.Body).Decode(&req)
		freed = append(freed, req.Name)
		w.Write([]byte("{}"))
	})
	mux.HandleFunc("GET /v1/marks", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"job":{"reason":"time-to-oom-within-lead","forecast":5100273664,"profile":"1g.10gb","fits":true}}`))
	})
	mux.HandleFunc("GET /v1/top", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"containers":[{"id":"other","currentBytes":1,"capacityBytes":2},{"id":"job","currentBytes":0,"shimBytes":300,"nvmlBytes":200,"capacityBytes":1000}]}`))
	})
	a := NewAgentClient(serveAgent(t, mux))
	ctx := context.Background()

	in, err := a.Alloc(ctx, "1g.5gb", "job")
	if err != nil || in != (Instance{UUID: "MIG-1", CDIName: "k/mig=MIG-1", Profile: "1g.5gb|job"}) {
		t.Errorf("Alloc = %+v, %v", in, err)
	}
	_, err = a.Alloc(ctx, "9g.1tb", "job")
	var bad *client.BadRequestError
	if !errors.As(err, &bad) {
		t.Errorf("Alloc of an unknown profile: %v, want a BadRequestError", err)
	}
	if err := a.Free(ctx, "k/mig=MIG-1"); err != nil || !reflect.DeepEqual(freed, []string{"k/mig=MIG-1"}) {
		t.Errorf("Free: %v, freed %v", err, freed)
	}
	marks, err := a.Marks(ctx)
	want := map[string]predictor.Mark{"job": {Reason: predictor.ReasonTimeToOOM, Forecast: 5100273664, Profile: "1g.10gb", Fits: true}}
	if err != nil || !reflect.DeepEqual(marks, want) {
		t.Errorf("Marks = %+v, %v", marks, err)
	}
	if u, ok, err := a.Usage(ctx, "job"); err != nil || !ok || u != (Usage{300, 1000}) {
		t.Errorf("Usage(job) = %+v %v %v", u, ok, err)
	}
	if _, ok, err := a.Usage(ctx, "gone"); err != nil || ok {
		t.Errorf("Usage(gone) = %v %v", ok, err)
	}
	if p, err := a.Profiles(ctx); err != nil || !reflect.DeepEqual(p, []string{"1g.5gb", "1g.10gb", "7g.40gb"}) {
		t.Errorf("Profiles = %v, %v", p, err)
	}
}

func TestAgentClientErrors(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/marks", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	})
	mux.HandleFunc("GET /v1/top", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("not json")) })
	mux.HandleFunc("POST /v1/alloc", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error":"bad request body"}`))
	})
	a := NewAgentClient(serveAgent(t, mux))
	ctx := context.Background()
	if _, err := a.Marks(ctx); err == nil {
		t.Error("Marks accepted a 500")
	}
	if _, _, err := a.Usage(ctx, "x"); err == nil {
		t.Error("Usage accepted bad JSON")
	}
	if _, err := a.Profiles(ctx); err == nil {
		t.Error("Profiles from an agent without the route")
	}
	if _, err := NewAgentClient("/nonexistent/agent.sock").Marks(ctx); err == nil {
		t.Error("Marks with no agent")
	}
}
