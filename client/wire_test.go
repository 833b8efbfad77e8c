package client_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/telemetry/telemetryapi"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json from the values below")

// wireValues are representative answers of the local API: every field
// set, every omitempty field left empty, an empty status.
func wireValues() map[string]any {
	last := time.Date(2026, 11, 27, 6, 40, 0, 123456789, time.UTC)
	gpus := []client.GPU{
		{Index: 0, Model: "NVIDIA A100-SXM4-40GB", UUID: "GPU-aaaa", Slots: 8, Slices: 7, Reachable: 12, Maximal: 19},
		{Index: 1, Model: "NVIDIA H100 80GB HBM3", UUID: "GPU-bbbb", Slots: 8, Slices: 7, Reachable: 0, Maximal: 19},
	}
	return map[string]any{
		"status": client.Status{
			GPUs: gpus,
			Instances: []client.StatusInstance{
				{GPU: 1, GIID: 3, CIID: 0, ProfileID: 9, Placement: client.Placement{Start: 4, Size: 4}, UUID: "MIG-0b1c",
					Profile: "3g.20gb", State: client.StateInUse, Owner: "pod:default/train",
					CDIName: "migpro.io/mig=MIG-0b1c", Healthy: true, Pod: "default/train"},
				{GPU: 0, GIID: 7, CIID: client.NoComputeInstance, ProfileID: 19, Placement: client.Placement{Start: 6, Size: 1},
					Profile: "1g.5gb", State: client.StateCreating},
				{GPU: 0, GIID: 1, CIID: 0, ProfileID: 14, Placement: client.Placement{Start: 0, Size: 2}, UUID: "MIG-idle",
					Profile: "2g.10gb", State: client.StateIdle, Healthy: true},
			},
			Pending:  map[string]int{"7g.40gb": 1, "1g.5gb": 3},
			Reserved: &client.Reservation{GPU: 1, Profile: "7g.80gb", Placement: &client.Placement{Start: 0, Size: 8}},
		},
		"status-whole-gpu": client.Status{
			GPUs:     gpus[:1],
			Reserved: &client.Reservation{GPU: 0, Profile: "7g.40gb"},
		},
		"status-empty": client.Status{},
		"marks": map[string]client.Mark{
			"c1": {Reason: "forecast-exceeds-capacity-at-horizon", At: 12.5, Samples: 40, Forecast: 5100273664, Confidence: 0.97,
				Horizon: 300, TimeToOOM: 42.25, Profile: "2g.20gb", Fits: true},
			"c2": {Reason: "usage-at-capacity", At: 3, Samples: 2},
		},
		"top": telemetryapi.Top{Containers: []telemetryapi.TopEntry{
			{ID: "c1", PodNamespace: "default", PodName: "train", PodUID: "u-1", ContainerName: "main", MIGUUIDs: []string{"MIG-0b1c"},
				CurrentBytes: 1 << 30, Source: telemetryapi.SourceShim, PeakBytes: 2 << 30, CapacityBytes: 20 << 30, ShimBytes: 1 << 30,
				NVMLBytes: 3 << 29, Processes: 2, Allocs: 10, Frees: 4, Samples: 99, LastSample: &last},
			{ID: "c2", MIGUUIDs: nil},
		}},
		"alloc": client.AllocResponse{UUID: "MIG-0b1c", CDIName: "migpro.io/mig=MIG-0b1c", Profile: "3g.20gb", GPU: 1, Placement: client.Placement{Start: 4, Size: 4}, Steps: 2},
	}
}

// TestWireJSON pins the local API's JSON: the values encode to the golden
// files byte for byte, and each golden file decodes into the client's type
// and encodes back unchanged (no field lost, added or reordered).
func TestWireJSON(t *testing.T) {
	for name, v := range wireValues() {
		got, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", name+".golden.json")
		if *update {
			if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want = bytes.TrimSuffix(want, []byte("\n"))
		if !bytes.Equal(got, want) {
			t.Errorf("%s encodes as\n%s\nwant\n%s", name, got, want)
		}
		back, err := roundTrip(name, want)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(back, want) {
			t.Errorf("%s decoded and encoded again is\n%s\nwant\n%s", name, back, want)
		}
	}
}

// roundTrip decodes b into the type the client reads it as, and encodes it
// again.
func roundTrip(name string, b []byte) ([]byte, error) {
	var v any
	switch name {
	case "marks":
		v = new(map[string]client.Mark)
	case "top":
		v = new(telemetryapi.Top)
	case "alloc":
		v = new(client.AllocResponse)
	default:
		v = new(client.Status)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return nil, err
	}
	return json.MarshalIndent(v, "", "  ")
}
