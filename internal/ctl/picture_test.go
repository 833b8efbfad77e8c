package ctl

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/partitioner"
)

// Every profile of every simulated model shows its whole name in its box,
// even at its narrowest (one memory slot).
func TestLayoutBoxesShowWholeProfileNames(t *testing.T) {
	for _, m := range simgpu.Models() {
		profs, err := simgpu.ModelProfiles(m)
		if err != nil {
			t.Fatal(err)
		}
		slots := 0
		for _, p := range profs {
			for _, pl := range p.Placements {
				slots = max(slots, pl.Start+pl.Size)
			}
		}
		for _, p := range profs {
			var in partitioner.Instance
			in.Profile, in.State, in.UUID = p.Name, partitioner.InUse, "MIG-0e5d12ab-0000-0000-0000-000000000000"
			in.Placement = p.Placements[0]
			var out bytes.Buffer
			DrawLayouts(&out, []partitioner.GPU{{Model: m, Slots: slots}}, []partitioner.Instance{in})
			if !regexp.MustCompile(`\[ *` + regexp.QuoteMeta(p.Name) + ` *\]`).MatchString(out.String()) {
				t.Errorf("%s %s: the box cuts the name:\n%s", m, p.Name, out.String())
			}
			if !strings.Contains(out.String(), "0e5d12ab") {
				t.Errorf("%s %s: the box cuts the ID:\n%s", m, p.Name, out.String())
			}
		}
	}
}
