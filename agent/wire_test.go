package agent

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/partitioner"
	"github.com/migpro/migpro/predictor"
)

// TestWireConversion: the partitioner's and predictor's values, turned into
// the client's wire types, encode to the local API's golden JSON (written
// when status still embedded the partitioner's types) byte for byte.
func TestWireConversion(t *testing.T) {
	held := partitioner.Instance{
		Instance: gpu.Instance{GPU: 1, GIID: 3, CIID: 0, ProfileID: 9, Placement: gpu.Placement{Start: 4, Size: 4}, UUID: "MIG-0b1c"},
		Profile:  "3g.20gb", State: partitioner.InUse, Owner: "pod:default/train",
	}
	half := partitioner.Instance{
		Instance: gpu.Instance{GPU: 0, GIID: 7, CIID: gpu.NoComputeInstance, ProfileID: 19, Placement: gpu.Placement{Start: 6, Size: 1}},
		Profile:  "1g.5gb", State: partitioner.Creating,
	}
	idle := partitioner.Instance{
		Instance: gpu.Instance{GPU: 0, GIID: 1, CIID: 0, ProfileID: 14, Placement: gpu.Placement{Start: 0, Size: 2}, UUID: "MIG-idle"},
		Profile:  "2g.10gb", State: partitioner.Idle,
	}
	gpus := []partitioner.GPU{
		{Index: 0, Model: "NVIDIA A100-SXM4-40GB", UUID: "GPU-aaaa", Slots: 8, Slices: 7, Reachable: 12, Maximal: 19},
		{Index: 1, Model: "NVIDIA H100 80GB HBM3", UUID: "GPU-bbbb", Slots: 8, Slices: 7, Reachable: 0, Maximal: 19},
	}
	h := wireInstance(held)
	h.CDIName, h.Healthy, h.Pod = "migpro.io/mig=MIG-0b1c", true, "default/train"
	i := wireInstance(idle)
	i.Healthy = true
	values := map[string]any{
		"status": client.Status{
			GPUs:      wireGPUs(gpus),
			Instances: []client.StatusInstance{h, wireInstance(half), i},
			Pending:   map[string]int{"7g.40gb": 1, "1g.5gb": 3},
			Reserved:  wireReservation(&partitioner.Reservation{GPU: 1, Profile: "7g.80gb", Placement: &gpu.Placement{Start: 0, Size: 8}}),
		},
		"status-whole-gpu": client.Status{GPUs: wireGPUs(gpus[:1]), Reserved: wireReservation(&partitioner.Reservation{GPU: 0, Profile: "7g.40gb"})},
		"status-empty":     client.Status{GPUs: wireGPUs(nil), Reserved: wireReservation(nil)},
		"marks": map[string]client.Mark{
			"c1": wireMark(predictor.Mark{Reason: predictor.ReasonHorizon, At: 12.5, Samples: 40, Forecast: 5100273664, Confidence: 0.97,
				Horizon: 300, TimeToOOM: 42.25, Profile: "2g.20gb", Fits: true}),
			"c2": wireMark(predictor.Mark{Reason: predictor.ReasonOverCapacity, At: 3, Samples: 2}),
		},
	}
	for name, v := range values {
		got, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("..", "client", "testdata", name+".golden.json"))
		if err != nil {
			t.Fatal(err)
		}
		if want = bytes.TrimSuffix(want, []byte("\n")); !bytes.Equal(got, want) {
			t.Errorf("%s encodes as\n%s\nwant\n%s", name, got, want)
		}
	}
}
