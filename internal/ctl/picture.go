package ctl

import (
	"fmt"
	"io"
	"strings"

	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/partitioner"
)

// cellWidth is the width of one memory slot in the layout picture: a
// one-slot box holds the longest one-slot name ("1g.18gb+me", "1g.10gb+me")
// between its brackets, and the 8-character ID.
const cellWidth = 12

// DrawLayouts draws each GPU as a row of memory slots: one box per instance
// spanning its slots, showing the profile, whether it is idle or in use, and
// the start of its UUID. Free slots are dotted.
func DrawLayouts(w io.Writer, gpus []partitioner.GPU, insts []partitioner.Instance) {
	for _, g := range gpus {
		fmt.Fprintf(w, "GPU %d  %s  %d/%d layouts reachable\n", g.Index, g.Model, g.Reachable, g.Maximal)
		var onGPU []partitioner.Instance
		for _, in := range insts {
			if in.GPU == g.Index {
				onGPU = append(onGPU, in)
			}
		}
		header := strings.Builder{}
		header.WriteString("  slot ")
		for s := 0; s < g.Slots; s++ {
			header.WriteString(center(fmt.Sprint(s), cellWidth))
		}
		fmt.Fprintln(w, header.String())
		rows := [3]strings.Builder{}
		for s := 0; s < g.Slots; {
			in, ok := instanceAt(onGPU, s)
			if !ok {
				rows[0].WriteString(center("·", cellWidth))
				rows[1].WriteString(strings.Repeat(" ", cellWidth))
				rows[2].WriteString(strings.Repeat(" ", cellWidth))
				s++
				continue
			}
			width := in.Placement.Size*cellWidth - 2
			uuid := strings.TrimPrefix(in.UUID, "MIG-")
			if len(uuid) > 8 {
				uuid = uuid[:8]
			}
			label := string(in.State)
			rows[0].WriteString("[" + center(in.Profile, width) + "]")
			rows[1].WriteString("|" + center(label, width) + "|")
			rows[2].WriteString("[" + center(uuid, width) + "]")
			s += in.Placement.Size
		}
		for _, r := range rows {
			if line := strings.TrimRight(r.String(), " "); line != "" {
				fmt.Fprintln(w, "       "+line)
			}
		}
		fmt.Fprintln(w)
	}
}

// DrawStatus draws the layouts of an agent's status answer.
func DrawStatus(w io.Writer, st client.Status) {
	gpus := make([]partitioner.GPU, len(st.GPUs))
	for i, g := range st.GPUs {
		gpus[i] = partitioner.GPU{Index: g.Index, Model: g.Model, UUID: g.UUID, Slots: g.Slots, Slices: g.Slices, Reachable: g.Reachable, Maximal: g.Maximal}
	}
	insts := make([]partitioner.Instance, len(st.Instances))
	for i, in := range st.Instances {
		insts[i] = partitioner.Instance{
			Instance: gpu.Instance{GPU: in.GPU, GIID: in.GIID, CIID: in.CIID, ProfileID: in.ProfileID,
				Placement: gpu.Placement{Start: in.Placement.Start, Size: in.Placement.Size}, UUID: in.UUID},
			Profile: in.Profile, State: partitioner.State(in.State), Owner: in.Owner,
		}
	}
	DrawLayouts(w, gpus, insts)
}

func instanceAt(insts []partitioner.Instance, slot int) (partitioner.Instance, bool) {
	for _, in := range insts {
		if in.Placement.Start == slot {
			return in, true
		}
	}
	return partitioner.Instance{}, false
}

// center pads s to width, truncating if it does not fit.
func center(s string, width int) string {
	n := len([]rune(s))
	if n >= width {
		return string([]rune(s)[:width])
	}
	left := (width - n) / 2
	return strings.Repeat(" ", left) + s + strings.Repeat(" ", width-n-left)
}
