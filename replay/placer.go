package replay

import (
	"context"
	"errors"
	"fmt"
	"math/bits"

	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/partitioner"
	"github.com/migpro/migpro/partitioner/geometry"
)

// grant is an instance handed to a run.
type grant struct {
	node, gpu int // gpu is the node-local index
	uuid      string
	profile   Profile
	placement gpu.Placement
	// steps are the NVML creates and destroys the grant cost (zero on reuse).
	steps []partitioner.Step
}

// offer is what one node could do for a request, without doing it.
type offer struct {
	node     int
	reuse    bool
	destroys int
	heavy    int // PCIe-heavy runs on the chosen GPU (PCIe-aware only)
	used     int // slices of the node's instances (packing)
	kept     [2]int
	// loss and gpuLoss are the plan's demand-weighted losses (migpro).
	loss, gpuLoss float64
	memory        uint64 // instance memory (static best fit)
	pin           *partitioner.Pin
	// gpu and mask are where the plan puts the instance (dynamic policies):
	// its GPU on the node and its memory slots.
	gpu  int
	mask uint16
}

// placer is how a policy turns a request into an instance. plan answers
// without changing anything; commit makes the grant that plan described.
type placer interface {
	plan(j *jobState, n int) (offer, bool, error)
	commit(j *jobState, o offer) (grant, error)
	better(a, b offer) bool
	release(g grant) error
}

// pcieCtx is per-node state the PCIe-aware partitioner policy reads: whether
// the request being placed is PCIe-heavy, and the node's GPUs.
type pcieCtx struct {
	node  *node
	heavy bool
}

// pcieAware wraps a partitioner policy: for a PCIe-heavy request it prefers
// the GPU with fewer PCIe-heavy runs, after the base rule on destroys and
// before every other rule of the base policy.
type pcieAware struct {
	base partitioner.Policy
	ctx  *pcieCtx
}

func (p pcieAware) Name() string { return p.base.Name() + "+pcie" }

func (p pcieAware) Better(a, b partitioner.Candidate) bool {
	if a.Destroys != b.Destroys {
		return a.Destroys < b.Destroys
	}
	if p.ctx.heavy {
		ha, hb := p.ctx.node.gpus[a.GPU].heavyHeld, p.ctx.node.gpus[b.GPU].heavyHeld
		if ha != hb {
			return ha < hb
		}
	}
	return p.base.Better(a, b)
}

// BetterReuse keeps the base policy's reuse order.
func (p pcieAware) BetterReuse(a, b partitioner.Candidate) bool {
	if rp, ok := p.base.(partitioner.ReusePolicy); ok {
		return rp.BetterReuse(a, b)
	}
	return partitioner.Reachability{}.BetterReuse(a, b)
}

// IdleAsFree keeps the base policy's treatment of idle instances.
func (p pcieAware) IdleAsFree() bool {
	fp, ok := p.base.(partitioner.IdleAsFreePolicy)
	return ok && fp.IdleAsFree()
}

// dynamic places through each node's real partitioner.
type dynamic struct {
	nodes     []*node
	model     *Model
	kind      Kind // FirstFit, NvidiaDRA, HAMi: the first node that can serve, not the best
	pcieAware bool
	// destroyAtEnd destroys an instance when its run ends (release).
	destroyAtEnd bool
	// holding serves a request that must wait on a larger instance that
	// holds it, as the agent's local API does
	// (partitioner.AllocateHolding).
	holding bool
}

func (d *dynamic) plan(j *jobState, n int) (offer, bool, error) {
	nd := d.nodes[n]
	if at := j.job.at; at != nil {
		// A run the planner's forward simulation starts where it runs now.
		if at.node != n {
			return offer{}, false, nil
		}
		pin := partitioner.Pin{GPU: at.gpu, Start: at.start}
		if err := nd.part.CheckPin(j.profile.Name, pin); err != nil {
			return offer{}, false, fmt.Errorf("node %d: run %s cannot start where it runs: %w", n, j.job.ID, err)
		}
		return offer{node: n, pin: &pin}, true, nil
	}
	fits := d.holding // a larger instance may hold it on any GPU
	for _, g := range nd.gpus {
		if fits = fits || g.mayFit(j.profile); fits {
			break
		}
	}
	if !fits {
		return offer{}, false, nil
	}
	heavy := d.pcieAware && j.job.Heavy()
	nd.pcie.heavy = heavy
	nd.placing = j.profile
	planFor := nd.part.Plan
	if d.holding {
		planFor = nd.part.PlanHolding
	}
	plan, err := planFor(j.profile.Name)
	if errors.Is(err, partitioner.ErrMustWait) {
		return offer{}, false, nil
	}
	if err != nil {
		return offer{}, false, fmt.Errorf("node %d: %w", n, err)
	}
	o := offer{node: n, reuse: plan.Reuse != nil, used: nd.used, kept: [2]int{plan.Reachable, max(plan.Before, 1)},
		loss: plan.Loss, gpuLoss: plan.GPULoss}
	for _, s := range plan.Steps {
		if s.Kind == partitioner.StepDestroy {
			o.destroys++
		}
	}
	if plan.Before == 0 {
		o.kept = [2]int{1, 1}
	}
	o.gpu = plan.GPU
	if plan.Reuse != nil {
		o.mask = geometry.SlotMask(plan.Reuse.Placement)
	} else if n := len(plan.Steps); n > 0 {
		o.mask = geometry.SlotMask(plan.Steps[n-1].Placement)
	}
	o.heavy = nd.gpus[plan.GPU].heavyHeld
	if heavy && o.heavy > 0 {
		d.spread(nd, j, &o)
	}
	if !heavy {
		o.heavy = 0
	}
	return o, true, nil
}

// spread steers a PCIe-heavy request away from the GPU the partitioner
// chose when another GPU of the node has fewer PCIe-heavy runs and either an
// idle instance of the profile (reuse) or a legal placement clear of every
// instance (create in free space). The partitioner itself reuses without
// consulting the policy, so the choice is pinned.
func (d *dynamic) spread(nd *node, j *jobState, o *offer) {
	occupied := make([]uint16, len(nd.gpus))
	slices := make([]int, len(nd.gpus))
	var idle []partitioner.Instance
	for _, in := range nd.part.Instances() {
		occupied[in.GPU] |= geometry.SlotMask(in.Placement)
		if p, ok := d.model.Profile(in.Profile); ok {
			slices[in.GPU] += p.Slices
		}
		if in.State == partitioner.Idle && in.Profile == j.profile.Name {
			idle = append(idle, in)
		}
	}
	for _, in := range idle {
		if h := nd.gpus[in.GPU].heavyHeld; h < o.heavy {
			o.heavy, o.reuse, o.destroys = h, true, 0
			o.pin = &partitioner.Pin{GPU: in.GPU, Start: in.Placement.Start}
		}
	}
	for gi, g := range nd.gpus {
		if g.heavyHeld >= o.heavy || slices[gi]+j.profile.Slices > g.model.Slices {
			continue
		}
		for _, mask := range g.model.geo.SlotMasks(j.profile.Name) {
			if mask&occupied[gi] != 0 {
				continue
			}
			start := bits.TrailingZeros16(mask)
			if nd.part.CheckPin(j.profile.Name, partitioner.Pin{GPU: gi, Start: start}) != nil {
				continue
			}
			o.heavy, o.reuse, o.destroys = g.heavyHeld, false, 0
			o.pin = &partitioner.Pin{GPU: gi, Start: start}
			break
		}
	}
}

func (d *dynamic) commit(j *jobState, o offer) (grant, error) {
	nd := d.nodes[o.node]
	nd.pcie.heavy = d.pcieAware && j.job.Heavy()
	nd.placing = j.profile
	allocate := nd.part.AllocateAt
	if d.holding {
		allocate = nd.part.AllocateHolding
	}
	inst, plan, err := allocate(context.Background(), j.profile.Name, o.pin, j.job.ID)
	if err != nil {
		return grant{}, fmt.Errorf("node %d: allocate %s for job %s: %w", o.node, j.profile.Name, j.job.ID, err)
	}
	return d.granted(nd, o.node, j, inst, plan), nil
}

// granted accounts for the steps of an allocation on node n and returns
// the grant it made.
func (d *dynamic) granted(nd *node, n int, j *jobState, inst partitioner.Instance, plan partitioner.Plan) grant {
	for _, s := range plan.Steps {
		p, _ := d.model.Profile(s.Profile)
		if s.Kind == partitioner.StepCreate {
			nd.used += p.Slices
		} else {
			nd.used -= p.Slices
		}
	}
	prof := j.profile
	if p, ok := d.model.Profile(inst.Profile); ok {
		prof = p // a larger instance (holding)
	}
	return grant{node: n, gpu: inst.GPU, uuid: inst.UUID, profile: prof, placement: inst.Placement, steps: plan.Steps}
}

func (d *dynamic) better(a, b offer) bool {
	if d.kind == FirstFit || d.kind == NvidiaDRA || d.kind == HAMi {
		if (a.destroys == 0) != (b.destroys == 0) {
			return a.destroys == 0
		}
		return a.node < b.node
	}
	// heavy is zero unless the option is on and the job is PCIe-heavy;
	// then sharing less bandwidth comes first.
	if a.heavy != b.heavy {
		return a.heavy < b.heavy
	}
	if a.reuse != b.reuse {
		return a.reuse
	}
	if a.destroys != b.destroys {
		return a.destroys < b.destroys
	}
	if d.kind == Migpro {
		// The node losing the least demand-weighted headroom, then the
		// fuller node, then the least capacity lost on the chosen GPU.
		if x := a.gpuLoss - b.gpuLoss; x < -1e-9 || x > 1e-9 {
			return x < 0
		}
		if a.used != b.used {
			return a.used > b.used
		}
		if x := a.loss - b.loss; x < -1e-9 || x > 1e-9 {
			return x < 0
		}
		return a.node < b.node
	}
	if a.used != b.used {
		return a.used > b.used
	}
	if l, r := a.kept[0]*b.kept[1], b.kept[0]*a.kept[1]; l != r {
		return l > r
	}
	return a.node < b.node
}

func (d *dynamic) release(g grant) error {
	if _, err := d.nodes[g.node].part.Release(g.uuid); err != nil {
		return fmt.Errorf("node %d: release %s: %w", g.node, g.uuid, err)
	}
	if d.destroyAtEnd {
		return d.destroyEnded(g)
	}
	return nil
}
