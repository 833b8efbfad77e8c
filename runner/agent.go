package runner

import (
	"context"

	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/predictor"
)

// AgentClient is the real Agent: the migpro agent's local API on its unix
// socket, through client.Client.
type AgentClient struct {
	c *client.Client
}

// NewAgentClient returns a client for the agent listening on socket.
func NewAgentClient(socket string) *AgentClient { return &AgentClient{c: client.New(socket)} }

// Alloc gets an instance; the agent's refusal of a bad profile is an
// *client.BadRequestError.
func (a *AgentClient) Alloc(ctx context.Context, profile, owner string) (Instance, error) {
	resp, err := a.c.Alloc(ctx, client.AllocRequest{Profile: profile, Owner: owner})
	if err != nil {
		return Instance{}, err
	}
	return Instance{UUID: resp.UUID, CDIName: resp.CDIName, Profile: resp.Profile}, nil
}

// Free releases and destroys an instance.
func (a *AgentClient) Free(ctx context.Context, name string) error { return a.c.Free(ctx, name) }

// Marks reads GET /v1/marks.
func (a *AgentClient) Marks(ctx context.Context) (map[string]predictor.Mark, error) {
	m, err := a.c.Marks(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]predictor.Mark, len(m))
	for id, w := range m {
		out[id] = predictor.Mark{
			Reason: predictor.Reason(w.Reason), At: w.At, Samples: w.Samples, Forecast: w.Forecast, Confidence: w.Confidence,
			Horizon: w.Horizon, TimeToOOM: w.TimeToOOM, Profile: w.Profile, Fits: w.Fits,
		}
	}
	return out, nil
}

// Usage finds a container in GET /v1/top.
func (a *AgentClient) Usage(ctx context.Context, id string) (Usage, bool, error) {
	top, err := a.c.Top(ctx)
	if err != nil {
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
