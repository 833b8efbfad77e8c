package simgpu

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/gpu/nvmlgpu"
	"github.com/migpro/migpro/internal/quietlog"
)

// StateVersion is the state-file format WithStateFile writes and reads.
const StateVersion = 1

// State is the simulated driver's durable state: what a real node's kernel
// driver would still hold after the agent died. It is the JSON document a
// state file holds, and what ReadStateFile returns.
type State struct {
	Version int `json:"version"`
	// Spec is the node's canonical spec, runs of a model merged
	// ("a100-40gb:2,h100-80gb:1").
	Spec string     `json:"spec"`
	Seed int64      `json:"seed"`
	GPUs []StateGPU `json:"gpus"`
}

// StateGPU is one GPU of a State.
type StateGPU struct {
	Index      int    `json:"index"`
	Model      string `json:"model"`
	UUID       string `json:"uuid"`
	MIGEnabled bool   `json:"migEnabled"`
	// MIGUUIDsMade is the position of the GPU's MIG UUID generator. Keeping
	// it is what makes UUIDs after a reload continue the sequence instead of
	// repeating one a destroyed instance had (a pod may still name it).
	MIGUUIDsMade uint64    `json:"migUUIDsMade"`
	GPUInstances []StateGI `json:"gpuInstances"`
}

// StateGI is one GPU instance, ordered by id within its GPU.
type StateGI struct {
	ID        int           `json:"id"`
	ProfileID int           `json:"profileId"`
	Placement gpu.Placement `json:"placement"`
	// MemoryUsed is the level SetInstanceMemoryUsed set, in bytes, without
	// the processes' own use.
	MemoryUsed       uint64         `json:"memoryUsedBytes"`
	Processes        []StateProcess `json:"processes"`
	ComputeInstances []StateCI      `json:"computeInstances"`
}

// StateCI is one compute instance and its MIG device's UUID.
type StateCI struct {
	ID        int    `json:"id"`
	ProfileID int    `json:"profileId"`
	UUID      string `json:"uuid"`
}

// StateProcess is a process AddProcess started, ordered by pid.
type StateProcess struct {
	PID        uint32 `json:"pid"`
	MemoryUsed uint64 `json:"memoryUsedBytes"`
}

// Instances lists the GPU's instances the way Node.DriverInstances does.
func (g StateGPU) Instances() []gpu.Instance {
	out := []gpu.Instance{}
	for _, gi := range g.GPUInstances {
		inst := gpu.Instance{GPU: g.Index, GIID: gi.ID, CIID: gpu.NoComputeInstance, ProfileID: gi.ProfileID, Placement: gi.Placement}
		if len(gi.ComputeInstances) > 0 {
			inst.CIID, inst.UUID = gi.ComputeInstances[0].ID, gi.ComputeInstances[0].UUID
		}
		out = append(out, inst)
	}
	gpu.SortInstances(out)
	return out
}

// ReadStateFile reads the state a node with WithStateFile(path) saved, for a
// process other than the one running that node (a test, migctl). It never
// writes or locks, and since saves replace the file by rename, it always
// sees one whole saved state, never a half-written one. The state is checked
// as strictly as a load: a file New would refuse is an error here too.
func ReadStateFile(path string) (State, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return State{}, fmt.Errorf("read simulated driver state: %w", err)
	}
	st, err := decodeState(data)
	if err != nil {
		return State{}, fmt.Errorf("simulated driver state %s: %w", path, err)
	}
	d, err := restoredDriver(st)
	if err != nil {
		return State{}, fmt.Errorf("simulated driver state %s is corrupt: %w", path, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.snapshotLocked(), nil
}

// restoredDriver is a fresh driver, without device files, for st's spec and
// seed with st restored into it: the strict check both a load and a reader
// put a state through.
func restoredDriver(st State) (*driver, error) {
	mcs, err := ParseSpec(st.Spec)
	if err != nil {
		return nil, err
	}
	// The driver is a throwaway that only checks the state: it logs nothing.
	d, err := newDriver(mcs, st.Seed, false, quietlog.New())
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.restoreLocked(st); err != nil {
		return nil, err
	}
	return d, nil
}

// decodeState parses a state file strictly: unknown fields, trailing data
// and other versions are refused rather than half understood.
func decodeState(data []byte) (State, error) {
	var st State
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return State{}, fmt.Errorf("corrupt: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return State{}, fmt.Errorf("corrupt: data after the state document")
	}
	if st.Version != StateVersion {
		return State{}, fmt.Errorf("format version %d, this build reads version %d", st.Version, StateVersion)
	}
	return st, nil
}

// snapshotLocked is the driver's durable state, in a stable order so equal
// states save to equal bytes.
func (d *driver) snapshotLocked() State {
	st := State{Version: StateVersion, Spec: d.spec(), Seed: d.seed, GPUs: []StateGPU{}}
	for _, g := range d.gpus {
		sg := StateGPU{Index: g.index, Model: g.model.name, UUID: g.uuid, MIGEnabled: g.migOn, MIGUUIDsMade: g.made, GPUInstances: []StateGI{}}
		for _, gi := range g.sortedGIsLocked() {
			sgi := StateGI{
				ID:               gi.id,
				ProfileID:        int(gi.info.Id),
				Placement:        gpu.Placement{Start: int(gi.placement.Start), Size: int(gi.placement.Size)},
				MemoryUsed:       gi.memUsed,
				Processes:        []StateProcess{},
				ComputeInstances: []StateCI{},
			}
			for pid, used := range gi.procs {
				sgi.Processes = append(sgi.Processes, StateProcess{PID: pid, MemoryUsed: used})
			}
			sort.Slice(sgi.Processes, func(i, j int) bool { return sgi.Processes[i].PID < sgi.Processes[j].PID })
			for _, ci := range gi.sortedCIsLocked() {
				sgi.ComputeInstances = append(sgi.ComputeInstances, StateCI{ID: ci.id, ProfileID: int(ci.info.Id), UUID: ci.uuid})
			}
			sg.GPUInstances = append(sg.GPUInstances, sgi)
		}
		st.GPUs = append(st.GPUs, sg)
	}
	return st
}

var migUUIDPattern = regexp.MustCompile(`^MIG-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// restoreLocked rebuilds a fresh driver's instances from st. Every instance
// passes the same admission checks a live create does, so a doctored or
// damaged file cannot produce a node the driver could never be in. The
// caller has already matched st's spec and seed to the driver's.
func (d *driver) restoreLocked(st State) error {
	if len(st.GPUs) != len(d.gpus) {
		return fmt.Errorf("%d GPUs listed, the spec %q has %d", len(st.GPUs), st.Spec, len(d.gpus))
	}
	uuids := map[string]bool{}
	for i, sg := range st.GPUs {
		g := d.gpus[i]
		if sg.Index != i || sg.Model != g.model.name || sg.UUID != g.uuid {
			return fmt.Errorf("GPU entry %d is index %d, model %q, UUID %q; the spec and seed give index %d, %q, %q",
				i, sg.Index, sg.Model, sg.UUID, i, g.model.name, g.uuid)
		}
		g.migOn = sg.MIGEnabled
		g.made = sg.MIGUUIDsMade
		cis := 0
		for _, sgi := range sg.GPUInstances {
			if err := restoreGILocked(g, sgi, uuids); err != nil {
				return fmt.Errorf("GPU %d, GPU instance %d: %w", i, sgi.ID, err)
			}
			cis += len(sgi.ComputeInstances)
		}
		if g.made < uint64(cis) {
			return fmt.Errorf("GPU %d: MIG UUID generator at %d, yet %d compute instances exist", i, g.made, cis)
		}
	}
	return nil
}

func restoreGILocked(g *gpuState, sgi StateGI, uuids map[string]bool) error {
	// gisPerGPU bounds GI ids because capability minors are laid out by them.
	if sgi.ID < 1 || sgi.ID >= gisPerGPU {
		return fmt.Errorf("id out of range 1..%d", gisPerGPU-1)
	}
	if _, dup := g.gis[sgi.ID]; dup {
		return fmt.Errorf("listed twice")
	}
	// Bounded before the uint32 conversion, which could otherwise wrap a
	// huge number onto a legal slot.
	if p := sgi.Placement; p.Start < 0 || p.Size < 0 || p.Start+p.Size > g.model.memSlots {
		return fmt.Errorf("placement %+v outside the GPU's %d memory slots", p, g.model.memSlots)
	}
	place := nvml.GpuInstancePlacement{Start: uint32(sgi.Placement.Start), Size: uint32(sgi.Placement.Size)}
	info, ret := g.admitGILocked(sgi.ProfileID, place)
	if ret != nvml.SUCCESS {
		return fmt.Errorf("profile %d at %+v refused by the driver rules: %s", sgi.ProfileID, sgi.Placement, nvmlgpu.CodeName(ret))
	}
	gi := g.insertGILocked(sgi.ID, info, place)
	if total := gi.info.MemorySizeMB * mib; sgi.MemoryUsed > total {
		return fmt.Errorf("%d bytes used of %d", sgi.MemoryUsed, total)
	}
	gi.memUsed = sgi.MemoryUsed
	for _, sci := range sgi.ComputeInstances {
		if sci.ID < 0 || sci.ID >= capsPerGI-1 {
			return fmt.Errorf("compute instance id %d out of range 0..%d", sci.ID, capsPerGI-2)
		}
		if _, dup := gi.cis[sci.ID]; dup {
			return fmt.Errorf("compute instance %d listed twice", sci.ID)
		}
		if !migUUIDPattern.MatchString(sci.UUID) || uuids[sci.UUID] {
			return fmt.Errorf("compute instance %d: bad or duplicate MIG UUID %q", sci.ID, sci.UUID)
		}
		uuids[sci.UUID] = true
		ciInfo, ret := gi.admitCILocked(sci.ProfileID)
		if ret != nvml.SUCCESS {
			return fmt.Errorf("compute instance %d: profile %d refused by the driver rules: %s", sci.ID, sci.ProfileID, nvmlgpu.CodeName(ret))
		}
		gi.insertCILocked(sci.ID, ciInfo, sci.UUID)
	}
	if len(sgi.Processes) > 0 && len(gi.cis) == 0 {
		return fmt.Errorf("%d processes but no compute instance to run on", len(sgi.Processes))
	}
	for _, p := range sgi.Processes {
		if _, dup := gi.procs[p.PID]; dup {
			return fmt.Errorf("process %d listed twice", p.PID)
		}
		gi.procs[p.PID] = p.MemoryUsed
	}
	return nil
}
