package partitioner

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"testing"
	"time"
)

// Sequence is the partitioner's own sequential choices: allocating the
// profile one request after another (reusing idle instances, destroying
// idle ones in the way, creating) lands exactly on its pins, in order,
// and asking for it changes neither the records nor the workload mix.
func TestSequenceIsTheSequentialAllocations(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, profile := range []string{"1g.5gb", "2g.10gb", "3g.20gb"} {
		t.Run(profile, func(t *testing.T) {
			p := newPart(t, newSim(t, "a100-40gb:2"), WithClock(func() time.Time { return now }))
			// Idle instances of several profiles and some in use, so the
			// choices reuse, re-place and create.
			mustAlloc(t, p, "1g.5gb", "")
			mustAlloc(t, p, "2g.10gb", "a")
			idle, _ := mustAlloc(t, p, "1g.10gb", "b")
			if _, err := p.Release(idle.UUID); err != nil {
				t.Fatal(err)
			}
			mustAlloc(t, p, "2g.10gb", "")
			mustAlloc(t, p, "3g.20gb", "c")
			recs, mix := p.Instances(), p.Mix()
			seq := p.Sequence(profile, 100)
			if !reflect.DeepEqual(p.Instances(), recs) || !maps.Equal(p.Mix(), mix) {
				t.Fatalf("Sequence changed the records or the mix")
			}
			if len(seq) == 0 {
				t.Fatal("empty sequence")
			}
			var got []Pin
			for {
				in, _, err := p.Allocate(context.Background(), profile, "x")
				if errors.Is(err, ErrMustWait) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, Pin{GPU: in.GPU, Start: in.Placement.Start})
			}
			if !reflect.DeepEqual(got, seq) {
				t.Errorf("sequence %v, allocations %v", seq, got)
			}
			if short := p.Sequence(profile, 1); len(short) != 0 {
				t.Errorf("sequence %v once nothing is left", short)
			}
		})
	}
}
