package simgpu_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/internal/quietlog"
	"github.com/migpro/migpro/partitioner"
)

const stateSpec = "a100-40gb:2,h100-80gb"

// openState opens a node on a state file under root. Tests that play a
// crash never Close the node: an abandoned node is what kill -9 leaves.
func openState(t *testing.T, path, root string, opts ...simgpu.Option) *simgpu.Node {
	t.Helper()
	n, err := simgpu.NewNode(stateSpec, append([]simgpu.Option{simgpu.WithStateFile(path), simgpu.WithRoot(root)}, opts...)...)
	if err != nil {
		t.Fatalf("open node on %s: %v", path, err)
	}
	return n
}

// drive puts a node through a fixed history touching everything the file
// keeps: complete and half-made instances, a destroyed one (which moves the
// UUID generator past the live instances), memory, a process, MIG mode.
// It returns every MIG UUID the history handed out.
func drive(t *testing.T, n *simgpu.Node) map[string]bool {
	t.Helper()
	d0, d2 := n.Devices()[0], n.Devices()[2]
	seen := map[string]bool{}
	full := func(d gpu.Device, name string, at gpu.Placement) int {
		gi, err := d.CreateGPUInstance(profileID(t, d, name), at)
		if err != nil {
			t.Fatalf("create %s at %s: %v", name, at, err)
		}
		inst, err := d.CreateComputeInstance(gi)
		if err != nil {
			t.Fatalf("create CI on GI %d: %v", gi, err)
		}
		seen[inst.UUID] = true
		return gi
	}
	big := full(d0, "3g.20gb", gpu.Placement{Start: 4, Size: 4})
	full(d0, "1g.5gb", gpu.Placement{Start: 0, Size: 1})
	gone := full(d0, "2g.10gb", gpu.Placement{Start: 2, Size: 2})
	if err := d0.DestroyComputeInstance(gone); err != nil {
		t.Fatal(err)
	}
	if err := d0.DestroyGPUInstance(gone); err != nil {
		t.Fatal(err)
	}
	if err := n.SetInstanceMemoryUsed(0, big, 1<<30); err != nil {
		t.Fatal(err)
	}
	if err := n.AddProcess(0, big, 4242, 512<<20); err != nil {
		t.Fatal(err)
	}
	if err := n.SetMIGMode(1, false); err != nil {
		t.Fatal(err)
	}
	full(d2, "3g.40gb", gpu.Placement{Start: 0, Size: 4})
	mustCreate(t, d2, "1g.10gb", gpu.Placement{Start: 6, Size: 1}, false)
	return seen
}

// observed is everything a restarted agent could see of a node.
type observed struct {
	Driver    [][]gpu.Instance
	Adapter   [][]gpu.Instance
	MIG       []bool
	Memory    gpu.MemoryInfo
	Processes []gpu.Process
}

func observe(t *testing.T, n *simgpu.Node, giWithProcs int) observed {
	t.Helper()
	var o observed
	for i, d := range n.Devices() {
		di, err := n.DriverInstances(i)
		if err != nil {
			t.Fatal(err)
		}
		on, err := d.MIGEnabled()
		if err != nil {
			t.Fatal(err)
		}
		o.Driver, o.MIG = append(o.Driver, di), append(o.MIG, on)
		var ai []gpu.Instance
		if on {
			if ai, err = d.Instances(); err != nil {
				t.Fatal(err)
			}
		}
		o.Adapter = append(o.Adapter, ai)
	}
	var err error
	if o.Memory, err = n.Devices()[0].InstanceMemory(giWithProcs); err != nil {
		t.Fatal(err)
	}
	if o.Processes, err = n.Devices()[0].InstanceProcesses(giWithProcs); err != nil {
		t.Fatal(err)
	}
	return o
}

func TestStateSurvivesCrash(t *testing.T) {
	dir, root := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "sim.json")
	crashed := openState(t, path, root)
	seen := drive(t, crashed)
	before := observe(t, crashed, 1)
	if len(seen) != 4 || len(before.Driver[0]) != 2 || len(before.Driver[2]) != 2 || before.MIG[1] {
		t.Fatalf("setup went wrong: %d UUIDs, state %+v", len(seen), before)
	}

	// A crash can leave capability files of an instance it never saved.
	stale := filepath.Join(root, "proc/driver/nvidia/capabilities/gpu0/mig/gi9/ci0")
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}

	n := openState(t, path, root) // the restarted agent
	defer n.Close()
	after := observe(t, n, 1)
	if !reflect.DeepEqual(after, before) {
		t.Fatalf("after restart:\n%+v\nwant:\n%+v", after, before)
	}
	if after.Memory.Used != 1<<30+512<<20 || len(after.Processes) != 1 || after.Processes[0].PID != 4242 {
		t.Fatalf("memory %+v processes %+v, want the level plus pid 4242's use", after.Memory, after.Processes)
	}
	caps := filepath.Join(root, "proc/driver/nvidia/capabilities")
	for _, inst := range append(after.Driver[0], after.Driver[2]...) {
		p := filepath.Join(caps, "gpu"+strconv.Itoa(inst.GPU), "mig", "gi"+strconv.Itoa(inst.GIID), "access")
		if _, err := os.Stat(p); err != nil {
			t.Errorf("loaded instance %+v has no capability file: %v", inst, err)
		}
	}
	if _, err := os.Stat(filepath.Dir(stale)); !os.IsNotExist(err) {
		t.Errorf("stale capability dir of an unsaved GI survived the load: %v", err)
	}

	// New instances continue the driver's habits: lowest free GI id, and a
	// UUID none of the history used - the same one a node that never
	// restarted would hand out.
	d0 := n.Devices()[0]
	gi := mustCreate(t, d0, "2g.10gb", gpu.Placement{Start: 2, Size: 2}, false)
	inst, err := d0.CreateComputeInstance(gi)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := simgpu.NewNode(stateSpec)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	drive(t, ref)
	refInst := must(t, ref.Devices()[0], "2g.10gb", gpu.Placement{Start: 2, Size: 2})
	if seen[inst.UUID] || inst.GIID != 3 || inst.UUID != refInst.UUID || inst.GIID != refInst.GIID {
		t.Fatalf("new instance after restart = %+v, want GI 3 with the uninterrupted node's UUID %s (and none of %v)", inst, refInst.UUID, seen)
	}
}

func must(t *testing.T, d gpu.Device, name string, at gpu.Placement) gpu.Instance {
	t.Helper()
	inst, err := d.CreateComputeInstance(mustCreate(t, d, name, at, false))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

func TestStateDestroyPersistsAndReads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sim.json")
	n := openState(t, path, t.TempDir())
	d := n.Devices()[0]
	inst := must(t, d, "3g.20gb", gpu.Placement{Start: 0, Size: 4})
	st, err := simgpu.ReadStateFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.GPUs[0].Instances(); len(got) != 1 || got[0] != inst {
		t.Fatalf("a reader sees %+v, want %+v", got, inst)
	}
	if err := d.DestroyComputeInstance(inst.GIID); err != nil {
		t.Fatal(err)
	}
	if err := d.DestroyGPUInstance(inst.GIID); err != nil {
		t.Fatal(err)
	}
	if st, err = simgpu.ReadStateFile(path); err != nil || len(st.GPUs[0].Instances()) != 0 || st.GPUs[0].MIGUUIDsMade != 1 {
		t.Fatalf("after destroy a reader sees %+v, %v; want no instances and the generator at 1", st, err)
	}
	again := openState(t, path, t.TempDir())
	defer again.Close()
	if got, _ := again.DriverInstances(0); len(got) != 0 {
		t.Fatalf("destroyed instance came back: %+v", got)
	}
}

func TestStateMismatchedNode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sim.json")
	n, err := simgpu.NewNode("a100-40gb:2", simgpu.WithStateFile(path))
	if err != nil {
		t.Fatal(err)
	}
	n.Close()
	// Equal nodes spelled differently are the same node.
	if n, err = simgpu.NewNode("a100-40gb,A100-40GB:1", simgpu.WithStateFile(path)); err != nil {
		t.Fatalf("same node spelled differently: %v", err)
	}
	n.Close()
	for _, c := range []struct {
		spec string
		seed int64
		want []string
	}{
		{"h100-80gb:2", simgpu.DefaultSeed, []string{`"a100-40gb:2"`, `"h100-80gb:2"`}},
		{"a100-40gb:3", simgpu.DefaultSeed, []string{`"a100-40gb:2"`, `"a100-40gb:3"`}},
		{"a100-40gb:2", 7, []string{"seed 1", "seed 7"}},
	} {
		_, err := simgpu.NewNode(c.spec, simgpu.WithStateFile(path), simgpu.WithSeed(c.seed))
		if err == nil {
			t.Fatalf("%s seed %d opened a file saved by a100-40gb:2 seed 1", c.spec, c.seed)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s seed %d: error %q does not name %s", c.spec, c.seed, err, w)
			}
		}
	}
}

func TestStateConcurrentChangesAllSaved(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sim.json")
	n := openState(t, path, t.TempDir())
	var wg sync.WaitGroup
	errs := make(chan error, 21)
	for i, d := range n.Devices() {
		wg.Add(1)
		go func(i int, d gpu.Device) {
			defer wg.Done()
			name := map[int]string{0: "1g.5gb", 1: "1g.5gb", 2: "1g.10gb"}[i]
			for slot := 0; slot < 7; slot++ {
				pid, err := profileIDErr(d, name)
				if err == nil {
					_, err = d.CreateGPUInstance(pid, gpu.Placement{Start: slot, Size: 1})
				}
				if err != nil {
					errs <- err
				}
			}
		}(i, d)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	again := openState(t, path, t.TempDir())
	defer again.Close()
	for i := range n.Devices() {
		want, _ := n.DriverInstances(i)
		got, _ := again.DriverInstances(i)
		if len(want) != 7 || !reflect.DeepEqual(got, want) {
			t.Fatalf("GPU %d reloaded as %+v, want %+v", i, got, want)
		}
	}
}

func profileIDErr(d gpu.Device, name string) (int, error) {
	ps, err := d.Profiles()
	if err != nil {
		return 0, err
	}
	for _, p := range ps {
		if p.Name == name {
			return p.ID, nil
		}
	}
	return 0, os.ErrNotExist
}

// The partitioner on a restarted agent adopts what the file kept, through
// the same adapter a real node uses, and its roll-back of a half-made
// instance is saved like any other change.
func TestStatePartitionerAdoptsReloaded(t *testing.T) {
	dir, root := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "sim.json")
	n := openState(t, path, root)
	drive(t, n)
	if err := n.SetMIGMode(1, true); err != nil {
		t.Fatal(err)
	}
	var want []gpu.Instance
	for i := range n.Devices() {
		insts, _ := n.DriverInstances(i)
		for _, in := range insts {
			if in.Complete() {
				want = append(want, in)
			}
		}
	}

	again := openState(t, path, root)
	defer again.Close()
	p, err := partitioner.New(again, partitioner.WithLogger(quietlog.New()))
	if err != nil {
		t.Fatal(err)
	}
	var got []gpu.Instance
	for _, in := range p.Instances() {
		if in.State != partitioner.Idle {
			t.Errorf("adopted %s in state %s, want idle", in, in.State)
		}
		got = append(got, in.Instance)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("partitioner adopted %+v, want %+v", got, want)
	}
	st, err := simgpu.ReadStateFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if left := st.GPUs[2].Instances(); len(left) != 1 || !left[0].Complete() {
		t.Fatalf("after the roll-back the file holds %+v on GPU 2, want only the complete 3g", left)
	}
}
