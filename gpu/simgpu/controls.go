package simgpu

import (
	"fmt"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/migpro/migpro/gpu"
)

// SetMIGMode turns a GPU's MIG mode on or off. Like the driver, it refuses
// to turn MIG off while GPU instances exist.
func (n *Node) SetMIGMode(gpuIndex int, on bool) error {
	n.d.mu.Lock()
	defer n.d.mu.Unlock()
	g, err := n.d.gpuLocked(gpuIndex)
	if err != nil {
		return err
	}
	if !on && len(g.gis) > 0 {
		return fmt.Errorf("disable MIG on simulated GPU %d: %d GPU instances exist: %w", gpuIndex, len(g.gis), gpu.ErrInUse)
	}
	was := g.migOn
	if was == on {
		return nil // nothing to save
	}
	g.migOn = on
	if err := n.d.persistLocked(); err != nil {
		g.migOn = was
		return fmt.Errorf("set MIG mode of simulated GPU %d: %w", gpuIndex, err)
	}
	return nil
}

// SetInstanceMemoryUsed sets the memory a GI's MIG device reports as used,
// before its processes' own use is added.
func (n *Node) SetInstanceMemoryUsed(gpuIndex, giID int, bytes uint64) error {
	n.d.mu.Lock()
	defer n.d.mu.Unlock()
	gi, err := n.d.giLocked(gpuIndex, giID)
	if err != nil {
		return fmt.Errorf("set memory used: %w", err)
	}
	if total := gi.info.MemorySizeMB * mib; bytes > total {
		return fmt.Errorf("set memory used of GPU instance %d on GPU %d to %d bytes: it has only %d", giID, gpuIndex, bytes, total)
	}
	was := gi.memUsed
	if was == bytes {
		return nil // nothing to save
	}
	gi.memUsed = bytes
	if err := n.d.persistLocked(); err != nil {
		gi.memUsed = was
		return fmt.Errorf("set memory used of GPU instance %d on GPU %d: %w", giID, gpuIndex, err)
	}
	return nil
}

// AddProcess starts a process on a GI's compute instance. A process holds
// the instance: destroying its CI or GI returns ERROR_IN_USE until
// RemoveProcess.
func (n *Node) AddProcess(gpuIndex, giID int, pid uint32, bytes uint64) error {
	n.d.mu.Lock()
	defer n.d.mu.Unlock()
	gi, err := n.d.giLocked(gpuIndex, giID)
	if err != nil {
		return fmt.Errorf("add process %d: %w", pid, err)
	}
	if len(gi.cis) == 0 {
		return fmt.Errorf("add process %d to GPU instance %d on GPU %d: it has no compute instance to run on", pid, giID, gpuIndex)
	}
	if _, ok := gi.procs[pid]; ok {
		return fmt.Errorf("add process %d to GPU instance %d on GPU %d: already running there", pid, giID, gpuIndex)
	}
	gi.procs[pid] = bytes
	if err := n.d.persistLocked(); err != nil {
		delete(gi.procs, pid)
		return fmt.Errorf("add process %d to GPU instance %d on GPU %d: %w", pid, giID, gpuIndex, err)
	}
	return nil
}

// RemoveProcess ends a process started with AddProcess.
func (n *Node) RemoveProcess(gpuIndex, giID int, pid uint32) error {
	n.d.mu.Lock()
	defer n.d.mu.Unlock()
	gi, err := n.d.giLocked(gpuIndex, giID)
	if err != nil {
		return fmt.Errorf("remove process %d: %w", pid, err)
	}
	if _, ok := gi.procs[pid]; !ok {
		return fmt.Errorf("remove process %d from GPU instance %d on GPU %d: not running there: %w", pid, giID, gpuIndex, gpu.ErrNotFound)
	}
	was := gi.procs[pid]
	delete(gi.procs, pid)
	if err := n.d.persistLocked(); err != nil {
		gi.procs[pid] = was
		return fmt.Errorf("remove process %d from GPU instance %d on GPU %d: %w", pid, giID, gpuIndex, err)
	}
	return nil
}

// InjectXid raises an Xid on a GPU, attributed to a GI (and its compute
// instance) or, with giID -1, to the whole GPU. Every event set registered
// for Xid events on that GPU receives it.
func (n *Node) InjectXid(gpuIndex, giID int, xid uint64) error {
	n.d.mu.Lock()
	defer n.d.mu.Unlock()
	g, err := n.d.gpuLocked(gpuIndex)
	if err != nil {
		return fmt.Errorf("inject Xid %d: %w", xid, err)
	}
	ev := nvml.EventData{
		Device:            g.handle,
		EventType:         nvml.EventTypeXidCriticalError,
		EventData:         xid,
		GpuInstanceId:     unattributed,
		ComputeInstanceId: unattributed,
	}
	if giID >= 0 {
		gi, err := n.d.giLocked(gpuIndex, giID)
		if err != nil {
			return fmt.Errorf("inject Xid %d: %w", xid, err)
		}
		ev.GpuInstanceId = uint32(gi.id)
		if cis := gi.sortedCIsLocked(); len(cis) > 0 {
			ev.ComputeInstanceId = uint32(cis[0].id)
		}
	}
	dropped := 0
	for _, es := range g.eventSets {
		select {
		case es.queue <- ev:
		default:
			dropped++
		}
	}
	if dropped > 0 {
		return fmt.Errorf("inject Xid %d on GPU %d: %d event queues were full", xid, gpuIndex, dropped)
	}
	return nil
}

// FailNth makes the nth call of op from now (1 = the next) fail with code,
// without changing any state, as a driver error mid-plan would. Faults on
// the same op count down independently.
func (n *Node) FailNth(op Op, nth int, code nvml.Return) error {
	if !isReconfigOp(op) {
		return fmt.Errorf("inject fault: unknown operation %q (want %v)", op, reconfigOps)
	}
	if nth < 1 {
		return fmt.Errorf("inject fault into %s: n is %d, want at least 1", op, nth)
	}
	if code == nvml.SUCCESS {
		return fmt.Errorf("inject fault into %s: code must be an error, not SUCCESS", op)
	}
	n.d.mu.Lock()
	defer n.d.mu.Unlock()
	n.d.faults = append(n.d.faults, &fault{op: op, remaining: nth, code: code})
	return nil
}

// PendingFaults is how many injected faults have not fallen due yet.
func (n *Node) PendingFaults() int {
	n.d.mu.Lock()
	defer n.d.mu.Unlock()
	return len(n.d.faults)
}

// SetLatency makes every later op (or all four with OpAll) take d, as real
// hardware takes 0.1-0.4 s per create or destroy. Zero removes the delay.
func (n *Node) SetLatency(op Op, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("set latency of %s: %v is negative", op, d)
	}
	ops := []Op{op}
	if op == OpAll {
		ops = reconfigOps
	} else if !isReconfigOp(op) {
		return fmt.Errorf("set latency: unknown operation %q (want %v or %q)", op, reconfigOps, OpAll)
	}
	n.d.mu.Lock()
	defer n.d.mu.Unlock()
	for _, o := range ops {
		n.d.latency[o] = d
	}
	return nil
}

func isReconfigOp(op Op) bool {
	for _, o := range reconfigOps {
		if o == op {
			return true
		}
	}
	return false
}

// DriverInstances is the simulated driver's own record of a GPU's
// instances, read without going through NVML calls or the adapter, in slot
// order. Tests compare it with what the adapter reports.
func (n *Node) DriverInstances(gpuIndex int) ([]gpu.Instance, error) {
	n.d.mu.Lock()
	defer n.d.mu.Unlock()
	g, err := n.d.gpuLocked(gpuIndex)
	if err != nil {
		return nil, err
	}
	out := []gpu.Instance{}
	for _, gi := range g.sortedGIsLocked() {
		inst := gpu.Instance{
			GPU:       g.index,
			GIID:      gi.id,
			CIID:      gpu.NoComputeInstance,
			ProfileID: int(gi.info.Id),
			Placement: gpu.Placement{Start: int(gi.placement.Start), Size: int(gi.placement.Size)},
		}
		if cis := gi.sortedCIsLocked(); len(cis) > 0 {
			inst.CIID, inst.UUID = cis[0].id, cis[0].uuid
		}
		out = append(out, inst)
	}
	gpu.SortInstances(out)
	return out, nil
}
