package simgpu

import (
	"sort"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// eventQueueLen bounds each event set like the driver's own queue; events
// injected into a full queue are dropped and reported to the injector.
const eventQueueLen = 256

// simEventSet is an NVML event set fed by InjectXid.
type simEventSet struct {
	*mock.EventSet
	d        *driver
	queue    chan nvml.EventData
	done     chan struct{}
	freeOnce sync.Once
	freed    bool // guarded by d.mu
}

var _ nvml.EventSet = (*simEventSet)(nil)

func newSimEventSet(d *driver) *simEventSet {
	return &simEventSet{
		EventSet: &mock.EventSet{},
		d:        d,
		queue:    make(chan nvml.EventData, eventQueueLen),
		done:     make(chan struct{}),
	}
}

// Wait blocks for up to ms milliseconds, like nvmlEventSetWait.
func (s *simEventSet) Wait(ms uint32) (nvml.EventData, nvml.Return) {
	select {
	case ev := <-s.queue:
		return ev, nvml.SUCCESS
	default:
	}
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case ev := <-s.queue:
		return ev, nvml.SUCCESS
	case <-s.done:
		return nvml.EventData{}, nvml.ERROR_INVALID_ARGUMENT
	case <-t.C:
		return nvml.EventData{}, nvml.ERROR_TIMEOUT
	}
}

// Free unregisters the set from every GPU.
func (s *simEventSet) Free() nvml.Return {
	ret := nvml.ERROR_INVALID_ARGUMENT
	s.freeOnce.Do(func() {
		s.d.mu.Lock()
		defer s.d.mu.Unlock()
		s.freed = true
		for _, g := range s.d.gpus {
			kept := g.eventSets[:0]
			for _, es := range g.eventSets {
				if es != s {
					kept = append(kept, es)
				}
			}
			g.eventSets = kept
		}
		close(s.done)
		ret = nvml.SUCCESS
	})
	return ret
}

func sortProcs(ps []nvml.ProcessInfo) {
	sort.Slice(ps, func(i, j int) bool { return ps[i].Pid < ps[j].Pid })
}
