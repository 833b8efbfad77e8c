package partitioner

import (
	"context"
	"sort"
	"testing"

	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/internal/quietlog"
)

func newSim(t testing.TB, spec string) *simgpu.Node {
	t.Helper()
	n, err := simgpu.NewNode(spec, simgpu.WithRoot(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

func newPart(t testing.TB, node gpu.Node, opts ...Option) *Partitioner {
	t.Helper()
	p, err := New(node, append([]Option{WithLogger(quietlog.New())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustAlloc(t testing.TB, p *Partitioner, profile, owner string) (Instance, Plan) {
	t.Helper()
	in, plan, err := p.Allocate(context.Background(), profile, owner)
	if err != nil {
		t.Fatalf("allocate %s: %v", profile, err)
	}
	return in, plan
}

// agreeWithDriver checks that the partitioner's records are exactly what the
// simulated driver holds: same GIs, placements, profiles and UUIDs.
func agreeWithDriver(t testing.TB, p *Partitioner, node *simgpu.Node) {
	t.Helper()
	recs := p.Instances()
	var drv []gpu.Instance
	for _, d := range node.Devices() {
		in, err := node.DriverInstances(d.Index())
		if err != nil {
			t.Fatal(err)
		}
		drv = append(drv, in...)
	}
	sort.Slice(drv, func(i, j int) bool {
		if drv[i].GPU != drv[j].GPU {
			return drv[i].GPU < drv[j].GPU
		}
		return drv[i].Placement.Start < drv[j].Placement.Start
	})
	if len(recs) != len(drv) {
		t.Fatalf("records hold %d instances, driver %d:\nrecords %+v\ndriver  %+v", len(recs), len(drv), recs, drv)
	}
	for i := range recs {
		r, d := recs[i].Instance, drv[i]
		if r.GPU != d.GPU || r.GIID != d.GIID || r.Placement != d.Placement || r.UUID != d.UUID || r.ProfileID != d.ProfileID {
			t.Fatalf("record %d = %+v, driver has %+v", i, r, d)
		}
	}
}

func gpuPlacement(start, size int) gpu.Placement { return gpu.Placement{Start: start, Size: size} }
