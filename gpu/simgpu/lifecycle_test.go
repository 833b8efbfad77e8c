package simgpu_test

import (
	"errors"
	"reflect"
	"regexp"
	"sync"
	"testing"

	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/internal/quietlog"
)

var migUUID = regexp.MustCompile(`^MIG-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
var gpuUUID = regexp.MustCompile(`^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func TestCreateListDestroy(t *testing.T) {
	n, err := simgpu.NewNode("a100-40gb:2,h100-80gb", simgpu.WithLogger(quietlog.New()))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if got := len(n.Devices()); got != 3 {
		t.Fatalf("%d devices, want 3", got)
	}
	d := n.Devices()[2]
	if d.Model() != "NVIDIA H100 80GB HBM3" || d.Minor() != 2 || d.Index() != 2 || !gpuUUID.MatchString(d.UUID()) {
		t.Fatalf("device 2 = %q minor %d index %d uuid %q", d.Model(), d.Minor(), d.Index(), d.UUID())
	}
	mem, err := d.Memory()
	if err != nil || mem.Total != 81920*1024*1024 {
		t.Fatalf("device memory = %+v, %v", mem, err)
	}

	gi, err := d.CreateGPUInstance(profileID(t, d, "3g.40gb"), gpu.Placement{Start: 4, Size: 4})
	if err != nil {
		t.Fatal(err)
	}
	half, err := d.Instances()
	if err != nil {
		t.Fatal(err)
	}
	if len(half) != 1 || half[0].Complete() || half[0].CIID != gpu.NoComputeInstance || half[0].GIID != gi {
		t.Fatalf("half-made listing = %+v", half)
	}
	inst, err := d.CreateComputeInstance(gi)
	if err != nil {
		t.Fatal(err)
	}
	want := gpu.Instance{GPU: 2, GIID: gi, CIID: 0, ProfileID: profileID(t, d, "3g.40gb"),
		Placement: gpu.Placement{Start: 4, Size: 4}, UUID: inst.UUID}
	if !reflect.DeepEqual(inst, want) || !inst.Complete() || !migUUID.MatchString(inst.UUID) {
		t.Fatalf("instance = %+v, want %+v with a MIG UUID", inst, want)
	}
	small := mustCreate(t, d, "1g.10gb", gpu.Placement{Start: 0, Size: 1}, true)
	list, err := d.Instances()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].GIID != small || list[1] != inst {
		t.Fatalf("listing = %+v, want the 1g at slot 0 then %+v", list, inst)
	}
	if others, _ := n.Devices()[0].Instances(); len(others) != 0 {
		t.Fatalf("GPU 0 shows %+v, want nothing", others)
	}

	if err := d.DestroyComputeInstance(gi); err != nil {
		t.Fatal(err)
	}
	if err := d.DestroyGPUInstance(gi); err != nil {
		t.Fatal(err)
	}
	list, _ = d.Instances()
	if len(list) != 1 || list[0].GIID != small {
		t.Fatalf("after destroy: %+v", list)
	}
	// The freed slots take a new instance: nothing of the old one lingers.
	mustCreate(t, d, "3g.40gb", gpu.Placement{Start: 4, Size: 4}, false)
}

func TestLowestFreeIDs(t *testing.T) {
	n, _ := simgpu.NewNode("a100-40gb", simgpu.WithLogger(quietlog.New()))
	d := n.Devices()[0]
	var ids []int
	for slot := 0; slot < 3; slot++ {
		ids = append(ids, mustCreate(t, d, "1g.5gb", gpu.Placement{Start: slot, Size: 1}, false))
	}
	if !reflect.DeepEqual(ids, []int{1, 2, 3}) {
		t.Fatalf("GI ids = %v, want 1 2 3", ids)
	}
	if err := d.DestroyGPUInstance(2); err != nil {
		t.Fatal(err)
	}
	if got := mustCreate(t, d, "1g.5gb", gpu.Placement{Start: 5, Size: 1}, false); got != 2 {
		t.Fatalf("reused GI id = %d, want the freed 2", got)
	}
}

func TestMemoryAndProcesses(t *testing.T) {
	n, _ := simgpu.NewNode("a100-40gb", simgpu.WithLogger(quietlog.New()))
	d := n.Devices()[0]
	gi := mustCreate(t, d, "2g.10gb", gpu.Placement{Start: 2, Size: 2}, true)

	m, err := d.InstanceMemory(gi)
	if err != nil || m.Total != 9856*1024*1024 || m.Used != 0 {
		t.Fatalf("fresh memory = %+v, %v", m, err)
	}
	if err := n.SetInstanceMemoryUsed(0, gi, 500<<20); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		pid   uint32
		bytes uint64
	}{{300, 2 << 30}, {100, 1 << 30}} {
		if err := n.AddProcess(0, gi, p.pid, p.bytes); err != nil {
			t.Fatal(err)
		}
	}
	m, _ = d.InstanceMemory(gi)
	if m.Used != 500<<20+3<<30 {
		t.Fatalf("used = %d, want base plus both processes", m.Used)
	}
	procs, err := d.InstanceProcesses(gi)
	want := []gpu.Process{{PID: 100, UsedBytes: 1 << 30}, {PID: 300, UsedBytes: 2 << 30}}
	if err != nil || !reflect.DeepEqual(procs, want) {
		t.Fatalf("processes = %+v, %v; want %+v", procs, err, want)
	}
	dev, _ := d.Memory()
	if dev.Used != m.Used {
		t.Fatalf("device used = %d, want the instance's %d", dev.Used, m.Used)
	}
	if err := n.SetInstanceMemoryUsed(0, gi, 20<<30); err == nil {
		t.Fatal("memory above the instance's size accepted")
	}
	if err := n.AddProcess(0, gi, 100, 1); err == nil {
		t.Fatal("duplicate pid accepted")
	}
	for _, pid := range []uint32{100, 300} {
		if err := n.RemoveProcess(0, gi, pid); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.RemoveProcess(0, gi, 100); err == nil {
		t.Fatal("removing a process twice succeeded")
	}
	if procs, _ := d.InstanceProcesses(gi); len(procs) != 0 {
		t.Fatalf("processes after removal = %+v", procs)
	}
	if err := d.DestroyComputeInstance(gi); err != nil {
		t.Fatalf("destroy after processes ended: %v", err)
	}
	if procs, err := d.InstanceProcesses(gi); err != nil || len(procs) != 0 {
		t.Fatalf("half-made GI processes = %+v, %v", procs, err)
	}
	if _, err := d.InstanceMemory(gi); err == nil {
		t.Fatal("memory of a GI without a compute instance read without error")
	}
	if err := n.AddProcess(0, gi, 1, 1); err == nil {
		t.Fatal("process added to a GI without a compute instance")
	}
	if _, err := d.InstanceMemory(99); !errors.Is(err, gpu.ErrNotFound) {
		t.Fatalf("memory of an unknown GI = %v, want not found", err)
	}
	if _, err := d.InstanceProcesses(99); !errors.Is(err, gpu.ErrNotFound) {
		t.Fatalf("processes of an unknown GI = %v, want not found", err)
	}
}

func TestDeterministicFromSeed(t *testing.T) {
	run := func(seed int64) []string {
		n, err := simgpu.NewNode("a100-40gb:2", simgpu.WithSeed(seed), simgpu.WithLogger(quietlog.New()))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range n.Devices() {
			out = append(out, d.UUID())
			for _, slot := range []int{6, 0, 3} {
				gi := mustCreate(t, d, "1g.5gb", gpu.Placement{Start: slot, Size: 1}, true)
				list, _ := d.Instances()
				for _, i := range list {
					if i.GIID == gi {
						out = append(out, i.UUID)
					}
				}
			}
		}
		return out
	}
	a, b, c := run(7), run(7), run(8)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed differs:\n%v\n%v", a, b)
	}
	seen := map[string]bool{}
	for i := range a {
		if a[i] == c[i] {
			t.Fatalf("seeds 7 and 8 agree on %s", a[i])
		}
		if seen[a[i]] {
			t.Fatalf("UUID %s issued twice", a[i])
		}
		seen[a[i]] = true
	}
}

func TestAdapterProfilesMatchModelTables(t *testing.T) {
	for _, model := range simgpu.Models() {
		n, err := simgpu.NewNode(model, simgpu.WithLogger(quietlog.New()))
		if err != nil {
			t.Fatal(err)
		}
		got, err := n.Devices()[0].Profiles()
		if err != nil {
			t.Fatal(err)
		}
		want, err := simgpu.ModelProfiles(model)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: adapter reports %+v, model table %+v", model, got, want)
		}
		if name, _ := n.ModelOf(0); name != model {
			t.Errorf("ModelOf(0) = %q, want %q", name, model)
		}
	}
}

// Concurrent reconfiguration of different GPUs and polling of the same ones
// must be race-free; the test is for -race as much as for its assertions.
func TestConcurrentUse(t *testing.T) {
	n, _ := simgpu.NewNode("a100-40gb:4", simgpu.WithLogger(quietlog.New()))
	var wg sync.WaitGroup
	for _, d := range n.Devices() {
		wg.Add(2)
		go func(d gpu.Device) {
			defer wg.Done()
			for round := 0; round < 20; round++ {
				gi, err := d.CreateGPUInstance(0, gpu.Placement{Start: round % 7, Size: 1})
				if err != nil {
					t.Errorf("GPU %d round %d: %v", d.Index(), round, err)
					return
				}
				if _, err := d.CreateComputeInstance(gi); err != nil {
					t.Errorf("GPU %d CI: %v", d.Index(), err)
					return
				}
				if err := d.DestroyComputeInstance(gi); err != nil {
					t.Error(err)
					return
				}
				if err := d.DestroyGPUInstance(gi); err != nil {
					t.Error(err)
					return
				}
			}
		}(d)
		go func(d gpu.Device) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if _, err := d.Instances(); err != nil {
					t.Error(err)
					return
				}
				if _, err := d.Memory(); err != nil {
					t.Error(err)
					return
				}
			}
		}(d)
	}
	wg.Wait()
	for i := range n.Devices() {
		if held, _ := n.DriverInstances(i); len(held) != 0 {
			t.Fatalf("GPU %d left with %+v", i, held)
		}
	}
}
