package dra_test

import (
	"context"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/migpro/migpro/agent"
	"github.com/migpro/migpro/dra"
	"github.com/migpro/migpro/partitioner"
)

// What the driver does beside Prepare and Unprepare: instances held outside
// DRA, unhealthy instances, and a cluster without the DRA API.

func TestHeldOutsideDRAIsNotOffered(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	e.start()
	// A device-plugin pod's or local user's instance: 3g.20gb at 4.
	if _, _, err := e.agent.Partitioner().AllocateAt(context.Background(), "3g.20gb", &partitioner.Pin{GPU: 0, Start: 4}, "kubelet"); err != nil {
		t.Fatal(err)
	}
	// The counters and the devices are written as separate slices, so wait
	// for both: a device slice still from before the allocation overlaps.
	overlapping := func() []string {
		var names []string
		for _, d := range e.devices() {
			if *d.Attributes["start"].IntValue+*d.Attributes["size"].IntValue > 4 {
				names = append(names, d.Name)
			}
		}
		return names
	}
	waitFor(t, "a republish of the counters and the devices", func() bool {
		cs := e.slices()[0].Spec.SharedCounters[0].Counters
		return val(cs["slot4"]) == 0 && val(cs["slices"]) == 4 && len(overlapping()) == 0
	})
	if names := overlapping(); len(names) > 0 {
		t.Errorf("devices %v overlap the instance held outside DRA", names)
	}
}

func TestXidTaintsTheDevice(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	e.start()
	if r := e.prepare(e.claim("a", "gpu0-1g-5gb-s3")); r.Error != "" {
		t.Fatal(r.Error)
	}
	in, _ := e.instanceAt("1g.5gb", 0, 3)
	if err := e.node.InjectXid(0, in.GIID, 79); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a taint", func() bool {
		for _, d := range e.devices() {
			if d.Name == "gpu0-1g-5gb-s3" {
				return len(d.Taints) == 1 && d.Taints[0].Effect == resourceapi.DeviceTaintEffectNoSchedule
			}
		}
		return false
	})
	for _, d := range e.devices() {
		if d.Name != "gpu0-1g-5gb-s3" && len(d.Taints) != 0 {
			t.Errorf("healthy device %s tainted", d.Name)
		}
	}
}

func TestNoDRAOnTheClusterIsOneLineNotACrash(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	e.cs.Resources = nil
	hook := &lines{}
	e.log.AddHook(hook)
	a := e.open(agent.WithCluster(dra.Link(nil, dra.WithClient(e.cs), dra.WithKubeletRoot(e.root))))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	waitFor(t, "the line", func() bool { return hook.count("DRA driver off") == 1 })
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("agent ended with %v", err)
	}
	if n := hook.count("DRA driver off"); n != 1 {
		t.Errorf("%d lines, want 1", n)
	}
}
