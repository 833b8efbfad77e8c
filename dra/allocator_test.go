package dra_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/migpro/migpro/dra"
	"github.com/migpro/migpro/partitioner"
)

// classes is the chart's DeviceClasses for the A100-40GB profiles.
type classes map[string]*resourceapi.DeviceClass

func chartClasses() classes {
	sel := func(expr string) []resourceapi.DeviceSelector {
		return []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: expr}}}
	}
	c := classes{"mig.migpro.dev": {ObjectMeta: metav1.ObjectMeta{Name: "mig.migpro.dev"},
		Spec: resourceapi.DeviceClassSpec{Selectors: sel(`device.driver == "migpro.dev"`)}}}
	for _, p := range []string{"1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"} {
		name := p + ".mig.migpro.dev"
		c[name] = &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: resourceapi.DeviceClassSpec{Selectors: sel(fmt.Sprintf(`device.driver == "migpro.dev" && device.attributes["migpro.dev"].profile == %q`, p))}}
	}
	return c
}

func (c classes) List() ([]*resourceapi.DeviceClass, error) {
	var out []*resourceapi.DeviceClass
	for _, v := range c {
		out = append(out, v)
	}
	return out, nil
}

func (c classes) Get(name string) (*resourceapi.DeviceClass, error) {
	if v, ok := c[name]; ok {
		return v, nil
	}
	return nil, fmt.Errorf("no DeviceClass %s", name)
}

// allocate runs the scheduler's structured allocator over the node's
// published slices, with the devices already allocated, and returns the
// device the claim gets ("" when it does not fit).
func (e *env) allocate(t *testing.T, allocated []string, req resourceapi.DeviceRequest) string {
	t.Helper()
	var slices []*resourceapi.ResourceSlice
	for _, s := range e.slices() {
		slices = append(slices, &s)
	}
	state := structured.AllocatedState{AllocatedDevices: sets.New[structured.DeviceID]()}
	for _, d := range allocated {
		state.AllocatedDevices.Insert(structured.MakeDeviceID(dra.DriverName, nodeName, d))
	}
	features := structured.Features{PartitionableDevices: true, PrioritizedList: true, DeviceTaints: true}
	alloc, err := structured.NewAllocator(context.Background(), features, state, chartClasses(), slices, cel.NewCache(10, cel.Features{}))
	if err != nil {
		t.Fatal(err)
	}
	req.Name = "mig"
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default", UID: types.UID("u")},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{req}}}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}
	res, err := alloc.Allocate(context.Background(), node, []*resourceapi.ResourceClaim{claim})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) == 0 {
		return ""
	}
	return res[0].Devices.Results[0].Device
}

func exactly(class string, cels ...string) resourceapi.DeviceRequest {
	r := &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}
	for _, c := range cels {
		r.Selectors = append(r.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: c}})
	}
	return resourceapi.DeviceRequest{Exactly: r}
}

// TestSchedulerAllocatorOverTheSlices: the scheduler's own allocator, run
// over what the driver publishes, takes migpro's placement for a profile,
// respects the counters (nothing overlaps an allocated device), gives a
// claim by memory the smallest profile that holds it, follows a
// firstAvailable list, and skips a tainted device.
func TestSchedulerAllocatorOverTheSlices(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	e.start()
	plan, err := e.agent.Partitioner().Plan("1g.5gb")
	if err != nil {
		t.Fatal(err)
	}
	st := plan.Steps[len(plan.Steps)-1]
	got := e.allocate(t, nil, exactly("1g.5gb.mig.migpro.dev"))
	if want := fmt.Sprintf("gpu0-1g-5gb-s%d", st.Placement.Start); got != want {
		t.Errorf("the allocator took %s, migpro would make %s", got, want)
	}

	// Counters: with a 4g.20gb allocated at 0, a 7g.40gb does not fit, a
	// 3g.20gb goes to slot 4 and no 2g.10gb lands under the 4g.
	held := []string{"gpu0-4g-20gb-s0"}
	if d := e.allocate(t, held, exactly("7g.40gb.mig.migpro.dev")); d != "" {
		t.Errorf("7g.40gb allocated as %s over an allocated 4g.20gb", d)
	}
	if d := e.allocate(t, held, exactly("3g.20gb.mig.migpro.dev")); d != "gpu0-3g-20gb-s4" {
		t.Errorf("3g.20gb next to the 4g.20gb: %q", d)
	}
	if d := e.allocate(t, held, exactly("2g.10gb.mig.migpro.dev")); d != "gpu0-2g-10gb-s4" {
		t.Errorf("2g.10gb next to the 4g.20gb: %q, want slot 4", d)
	}
	// Slices: 4g.20gb + 2g.10gb + 1g.5gb use all 7; a further 1g.10gb at 6
	// has a free slot pair but no slice left.
	if d := e.allocate(t, []string{"gpu0-4g-20gb-s0", "gpu0-2g-10gb-s4", "gpu0-1g-5gb-s6"}, exactly("1g.10gb.mig.migpro.dev")); d != "" {
		t.Errorf("1g.10gb allocated as %s with no compute slice left", d)
	}

	// By memory: at least 9 GiB is a 1g.10gb (NVML reports under 10 GiB for a
	// "10gb" profile holds less than 10Gi).
	d := e.allocate(t, nil, exactly("mig.migpro.dev", `device.capacity["migpro.dev"].memory.compareTo(quantity("9Gi")) >= 0`))
	if !strings.Contains(d, "-1g-10gb-") {
		t.Errorf("a claim for >= 9Gi got %q, want a 1g.10gb", d)
	}
	d = e.allocate(t, nil, exactly("mig.migpro.dev", `device.capacity["migpro.dev"].memory.compareTo(quantity("10Gi")) >= 0`))
	if !strings.Contains(d, "-3g-20gb-") {
		t.Errorf("a claim for >= 10Gi got %q, want a 3g.20gb", d)
	}
	// firstAvailable: a 2g.10gb, else a 3g.20gb.
	alt := resourceapi.DeviceRequest{FirstAvailable: []resourceapi.DeviceSubRequest{
		{Name: "small", DeviceClassName: "2g.10gb.mig.migpro.dev", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
		{Name: "large", DeviceClassName: "3g.20gb.mig.migpro.dev", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}}
	if d := e.allocate(t, nil, alt); !strings.Contains(d, "-2g-10gb-") {
		t.Errorf("firstAvailable on an empty GPU: %q, want a 2g.10gb", d)
	}
	if d := e.allocate(t, []string{"gpu0-4g-20gb-s0", "gpu0-1g-5gb-s4", "gpu0-1g-5gb-s6"}, alt); d != "" {
		t.Errorf("firstAvailable with neither fitting: %q", d)
	}
	if d := e.allocate(t, []string{"gpu0-2g-10gb-s0", "gpu0-2g-10gb-s2"}, alt); d != "gpu0-2g-10gb-s4" {
		t.Errorf("firstAvailable: %q, want the last 2g.10gb", d)
	}
	if d := e.allocate(t, []string{"gpu0-1g-5gb-s0", "gpu0-1g-5gb-s2", "gpu0-1g-5gb-s5"}, alt); d != "" {
		// 1g at 0, 2 and 5 block every 2g.10gb (0,2,4) and both 3g.20gb (0,4).
		t.Errorf("firstAvailable with every placement blocked: %q", d)
	}

	// A tainted device is skipped: an Xid on an instance at migpro's
	// placement moves the allocator to the next one.
	first := got
	c := e.claim("x", first)
	if r := e.prepare(c); r.Error != "" {
		t.Fatal(r.Error)
	}
	if msg := e.unprepare(c); msg != "" {
		t.Fatal(msg)
	}
	in, ok := e.instanceAt("1g.5gb", 0, st.Placement.Start)
	if !ok || in.State != partitioner.Idle {
		t.Fatalf("no idle instance at %s", first)
	}
	if err := e.node.InjectXid(0, in.GIID, 79); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the taint", func() bool { return e.allocate(t, nil, exactly("1g.5gb.mig.migpro.dev")) != first })
}
