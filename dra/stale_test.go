package dra_test

import (
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/migpro/migpro/agent"
)

// metric reads a counter from the agent's registry (0 when absent).
func metric(t testing.TB, a *agent.Agent, name string) float64 {
	t.Helper()
	fams, err := a.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name {
			var sum float64
			for _, m := range f.Metric {
				sum += counterOf(m)
			}
			return sum
		}
	}
	return 0
}

func counterOf(m *dto.Metric) float64 {
	if c := m.GetCounter(); c != nil {
		return c.GetValue()
	}
	return 0
}

// A Prepare at the first published device of the profile is migpro's
// preference; one at another device (a stale slice, or several claims
// allocated before a republish) is counted and logged, and the instance is
// still made where the scheduler allocated it. A repeated Prepare is not
// judged again.
func TestPrepareCountsAStaleSlice(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	hook := &lines{}
	e.log.AddHook(hook)
	e.start()
	first := e.firstOf("1g.5gb")
	c1 := e.claim("first", first)
	if r := e.prepare(c1); r.Error != "" {
		t.Fatal(r.Error)
	}
	if r := e.prepare(c1); r.Error != "" {
		t.Fatal(r.Error)
	}
	if p, n := metric(t, e.agent, "migpro_dra_prepared_devices_total"), metric(t, e.agent, "migpro_dra_prepare_not_preferred_total"); p != 1 || n != 0 {
		t.Fatalf("after one Prepare at migpro's first fit (and a repeat): prepared %v, not preferred %v; want 1 and 0", p, n)
	}
	waitFor(t, "the republish", func() bool { return e.firstOf("1g.5gb") != first })
	// The last 1g.5gb device is never migpro's preference while several
	// are free: the scheduler took it from a stale order.
	var last string
	for _, d := range e.devices() {
		if *d.Attributes["profile"].StringValue == "1g.5gb" && d.Name != first {
			last = d.Name
		}
	}
	c2 := e.claim("stale", last)
	if r := e.prepare(c2); r.Error != "" {
		t.Fatal(r.Error)
	}
	if p, n := metric(t, e.agent, "migpro_dra_prepared_devices_total"), metric(t, e.agent, "migpro_dra_prepare_not_preferred_total"); p != 2 || n != 1 {
		t.Errorf("after a Prepare at %s: prepared %v, not preferred %v; want 2 and 1", last, p, n)
	}
	if n := hook.count("other than migpro's preference (a stale slice)"); n != 1 {
		t.Errorf("%d stale-slice lines, want 1", n)
	}
	var start int
	for _, d := range e.devices() {
		if d.Name == last {
			start = int(*d.Attributes["start"].IntValue)
		}
	}
	if _, ok := e.instanceAt("1g.5gb", 0, start); !ok {
		t.Errorf("no 1g.5gb at slot %d (%s), where the scheduler allocated it", start, last)
	}
	// The first publish, and one after each Prepare.
	waitFor(t, "three publishes", func() bool { return metric(t, e.agent, "migpro_dra_slice_publishes_total") >= 3 })
	if metric(t, e.agent, "migpro_dra_slice_publish_bytes_total") <= 0 {
		t.Errorf("%v bytes published", metric(t, e.agent, "migpro_dra_slice_publish_bytes_total"))
	}
}
