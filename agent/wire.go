package agent

import (
	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/partitioner"
	"github.com/migpro/migpro/predictor"
)

// The local API speaks client's wire types; these turn the partitioner's and
// the predictor's values into them, so that neither package's Go types are
// part of the contract.

func wireGPUs(gs []partitioner.GPU) []client.GPU {
	if gs == nil {
		return nil
	}
	out := make([]client.GPU, len(gs))
	for i, g := range gs {
		out[i] = client.GPU{Index: g.Index, Model: g.Model, UUID: g.UUID, Slots: g.Slots, Slices: g.Slices, Reachable: g.Reachable, Maximal: g.Maximal}
	}
	return out
}

func wirePlacement(p gpu.Placement) client.Placement {
	return client.Placement{Start: p.Start, Size: p.Size}
}

func wireReservation(r *partitioner.Reservation) *client.Reservation {
	if r == nil {
		return nil
	}
	w := &client.Reservation{GPU: r.GPU, Profile: r.Profile}
	if r.Placement != nil {
		p := wirePlacement(*r.Placement)
		w.Placement = &p
	}
	return w
}

// wireInstance is in as status shows it, without the agent's additions
// (CDI name, health, pod).
func wireInstance(in partitioner.Instance) client.StatusInstance {
	return client.StatusInstance{
		GPU: in.GPU, GIID: in.GIID, CIID: in.CIID, ProfileID: in.ProfileID, Placement: wirePlacement(in.Placement), UUID: in.UUID,
		Profile: in.Profile, State: string(in.State), Owner: in.Owner,
	}
}

func wireMark(d predictor.Mark) client.Mark {
	return client.Mark{
		Reason: string(d.Reason), At: d.At, Samples: d.Samples, Forecast: d.Forecast, Confidence: d.Confidence,
		Horizon: d.Horizon, TimeToOOM: d.TimeToOOM, Profile: d.Profile, Fits: d.Fits,
	}
}
