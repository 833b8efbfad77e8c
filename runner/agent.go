package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/migpro/migpro/agent"
	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/predictor/telemetry/telemetryapi"
)

// AgentClient is the real Agent: the migpro agent's local API on its unix
// socket (alloc and free through agent.Client, marks and top read directly).
type AgentClient struct {
	socket string
	c      *agent.Client
	http   *http.Client
}

// NewAgentClient returns a client for the agent listening on socket.
func NewAgentClient(socket string) *AgentClient {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}
	return &AgentClient{socket: socket, c: agent.NewClient(socket), http: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
}

// Alloc gets an instance; the agent's refusal of a bad profile is an
// *agent.BadRequestError.
func (a *AgentClient) Alloc(ctx context.Context, profile, owner string) (Instance, error) {
	resp, err := a.c.Alloc(ctx, agent.AllocRequest{Profile: profile, Owner: owner})
	if err != nil {
		return Instance{}, err
	}
	return Instance{UUID: resp.UUID, CDIName: resp.CDIName, Profile: resp.Profile}, nil
}

// Free releases and destroys an instance.
func (a *AgentClient) Free(ctx context.Context, name string) error { return a.c.Free(ctx, name) }

// Marks reads GET /v1/marks.
func (a *AgentClient) Marks(ctx context.Context) (map[string]predictor.Decision, error) {
	var m map[string]predictor.Decision
	return m, a.get(ctx, "/v1/marks", &m)
}

// Usage finds a container in GET /v1/top.
func (a *AgentClient) Usage(ctx context.Context, id string) (Usage, bool, error) {
	var top telemetryapi.Top
	if err := a.get(ctx, "/v1/top", &top); err != nil {
		return Usage{}, false, err
	}
	for _, c := range top.Containers {
		if c.ID == id {
			// The larger of the two sources, as the predictor reads them:
			// CurrentBytes is only the newest sample, which may be an NVML
			// poll that does not see the shim's allocations.
			return Usage{Current: max(c.ShimBytes, c.NVMLBytes), Capacity: c.CapacityBytes}, true, nil
		}
	}
	return Usage{}, false, nil
}

// Profiles lists the profiles the node offers, smallest first.
func (a *AgentClient) Profiles(ctx context.Context) ([]string, error) { return a.c.Profiles(ctx) }

func (a *AgentClient) get(ctx context.Context, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://migpro"+path, nil)
	if err != nil {
		return err
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the migpro agent at %s: %w", a.socket, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: agent answered %s: %s", path, resp.Status, strings.TrimSpace(string(b)))
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	return nil
}
