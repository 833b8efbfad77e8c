package telemetry

import (
	"slices"
	"sync"
	"testing"

	"github.com/migpro/migpro/gpu/gputest"
)

// Every sample, shim or NVML, publishes the container's usage: both
// sources' latest figures, the shim's latest requested bytes and allocation
// count, and the time of the container's first sample.
// Registration answers what the container registered with.
func TestUsageMergesBothSources(t *testing.T) {
	s := newService(t)
	reg := Registration{ID: "c1", PID: 7, MIGUUIDs: []string{"MIG-1"}, PodNamespace: "ns", PodName: "p", ContainerName: "main"}
	ep, err := s.Register(reg)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := s.Registration("c1"); !ok || got.PodName != "p" || got.PID != 7 || !slices.Equal(got.MIGUUIDs, reg.MIGUUIDs) {
		t.Fatalf("Registration(c1) = %+v, %v", got, ok)
	}
	if _, ok := s.Registration("nobody"); ok {
		t.Fatal("Registration of an unknown container")
	}
	var mu sync.Mutex
	var got []Usage
	s.OnUsage(func(id string, u Usage) {
		mu.Lock()
		got = append(got, u)
		mu.Unlock()
	})
	s.PollOnce(gputest.Memory{"MIG-1": {500, 1000}})
	c := dial(t, ep.Socket)
	send(t, c, Message{Seq: 1, Current: 300, Peak: 300, Allocs: 4})
	waitFor(t, "2 samples", func() bool { return len(s.Samples("c1")) == 2 })
	send(t, c, Message{Seq: 2, Current: 800, Peak: 800, Allocs: 6})
	waitFor(t, "3 samples", func() bool { return len(s.Samples("c1")) == 3 })
	s.PollOnce(gputest.Memory{"MIG-1": {200, 1000}})
	samples := s.Samples("c1")
	mu.Lock()
	defer mu.Unlock()
	want := []Usage{
		{NVMLBytes: 500},
		{NVMLBytes: 500, ShimBytes: 300, ShimSeen: true, RequestedBytes: 300, Allocs: 4},
		{NVMLBytes: 500, ShimBytes: 800, ShimSeen: true, RequestedBytes: 800, Allocs: 6},
		{NVMLBytes: 200, ShimBytes: 800, ShimSeen: true, RequestedBytes: 800, Allocs: 6},
	}
	if len(got) != len(want) {
		t.Fatalf("usages %+v, want %d", got, len(want))
	}
	for i, w := range want {
		w.At, w.Since = samples[i].At, samples[0].At
		if got[i] != w {
			t.Errorf("usage %d = %+v, want %+v", i, got[i], w)
		}
	}
}
