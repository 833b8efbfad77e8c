package simgpu_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/internal/quietlog"
)

// profileID finds a profile by name on a device, failing the test if the
// device does not offer it.
func profileID(t *testing.T, d gpu.Device, name string) int {
	t.Helper()
	ps, err := d.Profiles()
	if err != nil {
		t.Fatalf("profiles: %v", err)
	}
	for _, p := range ps {
		if p.Name == name {
			return p.ID
		}
	}
	t.Fatalf("GPU %d has no profile %s", d.Index(), name)
	return 0
}

// mustCreate makes a GI (and, if full, its CI) and returns the GI id.
func mustCreate(t *testing.T, d gpu.Device, name string, at gpu.Placement, full bool) int {
	t.Helper()
	gi, err := d.CreateGPUInstance(profileID(t, d, name), at)
	if err != nil {
		t.Fatalf("create %s at %s: %v", name, at, err)
	}
	if full {
		if _, err := d.CreateComputeInstance(gi); err != nil {
			t.Fatalf("create CI on GI %d: %v", gi, err)
		}
	}
	return gi
}

type world struct {
	t *testing.T
	n *simgpu.Node
	d gpu.Device
	// gi is the GI id a row's setup made, for the action to aim at.
	gi int
}

func TestDriverRefusals(t *testing.T) {
	at := func(s, z int) gpu.Placement { return gpu.Placement{Start: s, Size: z} }
	create := func(name string, p gpu.Placement) func(w *world) error {
		return func(w *world) error {
			_, err := w.d.CreateGPUInstance(profileID(w.t, w.d, name), p)
			return err
		}
	}
	cases := []struct {
		name     string
		spec     string
		opts     []simgpu.Option
		setup    func(w *world)
		act      func(w *world) error
		wantKind error
		wantCode string
	}{
		{
			name: "create while MIG mode is off",
			spec: "a100-40gb",
			setup: func(w *world) {
				profileID(w.t, w.d, "1g.5gb") // profiles read while MIG was on
				if err := w.n.SetMIGMode(0, false); err != nil {
					w.t.Fatal(err)
				}
			},
			act:      create("1g.5gb", at(0, 1)),
			wantKind: gpu.ErrNotSupported, wantCode: "ERROR_NOT_SUPPORTED",
		},
		{
			name: "profiles hidden while MIG mode is off from the start",
			spec: "a100-40gb", opts: []simgpu.Option{simgpu.WithMIGDisabled()},
			act: func(w *world) error {
				_, err := w.d.CreateGPUInstance(nvml.GPU_INSTANCE_PROFILE_1_SLICE, at(0, 1))
				return err
			},
			wantKind: gpu.ErrNotSupported, wantCode: "ERROR_NOT_SUPPORTED",
		},
		{name: "3g at an unaligned start", spec: "a100-40gb", act: create("3g.20gb", at(2, 4)),
			wantKind: gpu.ErrInvalidArgument, wantCode: "ERROR_INVALID_ARGUMENT"},
		{name: "1g past the last compute slot", spec: "a100-40gb", act: create("1g.5gb", at(7, 1)),
			wantKind: gpu.ErrInvalidArgument, wantCode: "ERROR_INVALID_ARGUMENT"},
		{name: "1g double-memory at an odd slot", spec: "a100-40gb", act: create("1g.10gb", at(1, 2)),
			wantKind: gpu.ErrInvalidArgument, wantCode: "ERROR_INVALID_ARGUMENT"},
		{name: "H100 3g with the mock's size 3", spec: "h100-80gb", act: create("3g.40gb", at(0, 3)),
			wantKind: gpu.ErrInvalidArgument, wantCode: "ERROR_INVALID_ARGUMENT"},
		{name: "H100 7g with the mock's size 7", spec: "h100-80gb", act: create("7g.80gb", at(0, 7)),
			wantKind: gpu.ErrInvalidArgument, wantCode: "ERROR_INVALID_ARGUMENT"},
		{name: "H200 1g double-memory with the mock's size 1", spec: "h200-141gb", act: create("1g.35gb", at(2, 1)),
			wantKind: gpu.ErrInvalidArgument, wantCode: "ERROR_INVALID_ARGUMENT"},
		{name: "A30 2g at an odd slot", spec: "a30-24gb", act: create("2g.12gb", at(1, 2)),
			wantKind: gpu.ErrInvalidArgument, wantCode: "ERROR_INVALID_ARGUMENT"},
		{name: "profile the GPU does not have", spec: "a30-24gb",
			act: func(w *world) error {
				_, err := w.d.CreateGPUInstance(nvml.GPU_INSTANCE_PROFILE_7_SLICE, at(0, 8))
				return err
			},
			wantKind: gpu.ErrInvalidArgument, wantCode: "ERROR_INVALID_ARGUMENT"},
		{
			name:     "overlap with an existing GI",
			spec:     "a100-40gb",
			setup:    func(w *world) { w.gi = mustCreate(w.t, w.d, "3g.20gb", at(4, 4), true) },
			act:      create("1g.5gb", at(5, 1)),
			wantKind: gpu.ErrInsufficientResources, wantCode: "ERROR_INSUFFICIENT_RESOURCES",
		},
		{
			name:     "overlap with a half-made GI",
			spec:     "a100-40gb",
			setup:    func(w *world) { w.gi = mustCreate(w.t, w.d, "4g.20gb", at(0, 4), false) },
			act:      create("2g.10gb", at(2, 2)),
			wantKind: gpu.ErrInsufficientResources, wantCode: "ERROR_INSUFFICIENT_RESOURCES",
		},
		{
			name:     "more 1g+me instances than the profile's count",
			spec:     "a100-40gb",
			setup:    func(w *world) { w.gi = mustCreate(w.t, w.d, "1g.5gb+me", at(0, 1), true) },
			act:      create("1g.5gb+me", at(3, 1)),
			wantKind: gpu.ErrInsufficientResources, wantCode: "ERROR_INSUFFICIENT_RESOURCES",
		},
		{
			name:     "more A30 2g+me instances than the profile's count",
			spec:     "a30-24gb",
			setup:    func(w *world) { w.gi = mustCreate(w.t, w.d, "2g.12gb+me", at(0, 2), true) },
			act:      create("2g.12gb+me", at(2, 2)),
			wantKind: gpu.ErrInsufficientResources, wantCode: "ERROR_INSUFFICIENT_RESOURCES",
		},
		{
			name:  "second compute instance on a full GI",
			spec:  "a100-40gb",
			setup: func(w *world) { w.gi = mustCreate(w.t, w.d, "2g.10gb", at(2, 2), true) },
			act: func(w *world) error {
				_, err := w.d.CreateComputeInstance(w.gi)
				return err
			},
			wantKind: gpu.ErrInsufficientResources, wantCode: "ERROR_INSUFFICIENT_RESOURCES",
		},
		{
			name:     "destroy a GI that still has its CI",
			spec:     "a100-40gb",
			setup:    func(w *world) { w.gi = mustCreate(w.t, w.d, "1g.5gb", at(6, 1), true) },
			act:      func(w *world) error { return w.d.DestroyGPUInstance(w.gi) },
			wantKind: gpu.ErrInUse, wantCode: "ERROR_IN_USE",
		},
		{
			name: "destroy a CI with a process running",
			spec: "h100-80gb",
			setup: func(w *world) {
				w.gi = mustCreate(w.t, w.d, "1g.10gb", at(6, 1), true)
				if err := w.n.AddProcess(0, w.gi, 4242, 1<<30); err != nil {
					w.t.Fatal(err)
				}
			},
			act:      func(w *world) error { return w.d.DestroyComputeInstance(w.gi) },
			wantKind: gpu.ErrInUse, wantCode: "ERROR_IN_USE",
		},
		{
			name: "destroy a GI with a process running",
			spec: "a100-80gb",
			setup: func(w *world) {
				w.gi = mustCreate(w.t, w.d, "7g.80gb", at(0, 8), true)
				if err := w.n.AddProcess(0, w.gi, 7, 1<<20); err != nil {
					w.t.Fatal(err)
				}
			},
			act:      func(w *world) error { return w.d.DestroyGPUInstance(w.gi) },
			wantKind: gpu.ErrInUse, wantCode: "ERROR_IN_USE",
		},
		{name: "destroy an unknown GI", spec: "a100-40gb",
			act:      func(w *world) error { return w.d.DestroyGPUInstance(9) },
			wantKind: gpu.ErrNotFound, wantCode: "ERROR_NOT_FOUND"},
		{name: "compute instance on an unknown GI", spec: "a100-40gb",
			act: func(w *world) error {
				_, err := w.d.CreateComputeInstance(3)
				return err
			},
			wantKind: gpu.ErrNotFound, wantCode: "ERROR_NOT_FOUND"},
		{name: "negative GI id", spec: "a100-40gb",
			act:      func(w *world) error { return w.d.DestroyGPUInstance(-1) },
			wantKind: gpu.ErrInvalidArgument, wantCode: "ERROR_INVALID_ARGUMENT"},
		{
			name:     "destroy the CI of a GI that has none",
			spec:     "a100-40gb",
			setup:    func(w *world) { w.gi = mustCreate(w.t, w.d, "2g.10gb", at(0, 2), false) },
			act:      func(w *world) error { return w.d.DestroyComputeInstance(w.gi) },
			wantKind: gpu.ErrNotFound, wantCode: "ERROR_NOT_FOUND",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, err := simgpu.NewNode(c.spec, append([]simgpu.Option{simgpu.WithLogger(quietlog.New())}, c.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer n.Close()
			w := &world{t: t, n: n, d: n.Devices()[0], gi: -1}
			if c.setup != nil {
				c.setup(w)
			}
			before := driverState(t, n)
			err = c.act(w)
			if !errors.Is(err, c.wantKind) {
				t.Fatalf("error = %v, want kind %v", err, c.wantKind)
			}
			var de *gpu.DriverError
			if !errors.As(err, &de) || de.Code != c.wantCode {
				t.Fatalf("error = %#v, want a DriverError with code %s", err, c.wantCode)
			}
			if after := driverState(t, n); !reflect.DeepEqual(before, after) {
				t.Fatalf("refused call changed the driver state:\nbefore %+v\nafter  %+v", before, after)
			}
		})
	}
}

// driverState is the simulated driver's record of GPU 0 plus what the
// adapter reports, which must agree.
func driverState(t *testing.T, n *simgpu.Node) []gpu.Instance {
	t.Helper()
	held, err := n.DriverInstances(0)
	if err != nil {
		t.Fatal(err)
	}
	if on, _ := n.Devices()[0].MIGEnabled(); on {
		seen, err := n.Devices()[0].Instances()
		if err != nil {
			t.Fatal(err)
		}
		if len(seen) == 0 {
			seen = []gpu.Instance{}
		}
		if !reflect.DeepEqual(held, seen) {
			t.Fatalf("adapter sees %+v, driver holds %+v", seen, held)
		}
	}
	return held
}
