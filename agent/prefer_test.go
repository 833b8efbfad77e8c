package agent

import (
	"context"
	"testing"

	"k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/migpro/migpro/partitioner"
)

// The kubelet's GetPreferredAllocation, over gRPC on the agent's plugin:
// among idle instances it prefers the one whose reuse keeps the most layouts
// reachable (a 1g.5gb at slot 6 keeps 33 of 78 on an A100-40GB, one at
// slot 0 only 21).
func TestPreferredAllocationKeepsLayoutsReachable(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	a := e.start(t)
	ctx := context.Background()
	var low, high string
	for _, slot := range []int{0, 6} {
		in, _, err := a.part.AllocateAt(ctx, "1g.5gb", &partitioner.Pin{GPU: 0, Start: slot}, "")
		if err != nil {
			t.Fatal(err)
		}
		if slot == 0 {
			low = in.UUID
		} else {
			high = in.UUID
		}
	}
	c := pluginClient(t, a, "1g.5gb")
	for _, order := range [][]string{{low, high}, {high, low}} {
		resp, err := c.GetPreferredAllocation(ctx, &v1beta1.PreferredAllocationRequest{ContainerRequests: []*v1beta1.ContainerPreferredAllocationRequest{
			{AvailableDeviceIDs: order, AllocationSize: 1},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.ContainerResponses[0].DeviceIDs; len(got) != 1 || got[0] != high {
			t.Fatalf("available %v: preferred %v, want the slot-6 instance %s", order, got, high)
		}
	}
	// mustInclude wins over preference.
	resp, err := c.GetPreferredAllocation(ctx, &v1beta1.PreferredAllocationRequest{ContainerRequests: []*v1beta1.ContainerPreferredAllocationRequest{
		{AvailableDeviceIDs: []string{low, high}, MustIncludeDeviceIDs: []string{low}, AllocationSize: 1},
	}})
	if err != nil || resp.ContainerResponses[0].DeviceIDs[0] != low {
		t.Fatalf("must-include ignored: %v %v", resp, err)
	}
}
