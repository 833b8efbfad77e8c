package replay

import (
	"fmt"
	"strings"
)

// Kind is how a policy places instances.
type Kind int

const (
	// Static hands out the instances of a fixed layout made before any job.
	Static Kind = iota
	// FirstFit is dynamic MIG without fragmentation scoring: the
	// partitioner's first-fit policy, and the first node that can serve.
	FirstFit
	// Reachability is the partitioner's plain reachability policy (reuse,
	// then create at the placement keeping the most layouts reachable, then
	// destroy idle instances), and a cluster choice that prefers reuse and
	// packs nodes: migpro before demand weighting, kept to compare.
	Reachability
	// Migpro is the partitioner's demand-aware policy, fed the queue's
	// pending demand, with a cluster choice by the least demand-weighted
	// loss and a reservation for a request that has waited too long.
	Migpro
	// NvidiaDRA models NVIDIA's DRA driver: first GPU, lowest free start,
	// made at start and destroyed at end (baselines.go).
	NvidiaDRA
	// HAMi models HAMi's dynamic MIG placement scoring, made on allocation
	// and destroyed at end (baselines.go).
	HAMi
)

// Order is how the wait queue is served.
type Order int

const (
	// Backfill serves waiting jobs in arrival order, and starts any that
	// fits even when an earlier one cannot.
	Backfill Order = iota
	// FIFO is Policy B: strict arrival order; nothing passes a
	// job that must wait.
	FIFO
	// SmallFirst is Policy A: jobs grouped by requested size,
	// the smallest first (arrival order within a size), with backfill.
	SmallFirst
	// LargeFirst groups jobs by size the largest first, with backfill
	// (what migpro/A-size did before it served the smallest first).
	LargeFirst
)

func (o Order) String() string {
	switch o {
	case FIFO:
		return "fifo"
	case SmallFirst:
		return "smallest first"
	case LargeFirst:
		return "largest first"
	}
	return "backfill"
}

// Strategy is one policy as the replay runs it: how it places (Kind), how
// it orders the queue and which extras it adds, over the shared engine.
// It is not partitioner.Policy, the per-node placement rule a Strategy
// may use.
type Strategy struct {
	Name string
	Kind Kind
	// FullGPU makes every job ask for the whole GPU (the sequential
	// baseline).
	FullGPU bool
	// Layout names the static layout; empty tries every layout and keeps
	// the one with the shortest makespan.
	Layout string
	Order  Order
	// DestroyAtEnd destroys each instance when its run ends, so no idle
	// instance is ever reused (the nvidia-dra and hami baselines).
	DestroyAtEnd bool
	// Predict sizes jobs with the estimator (declared memory, then the
	// peaks of earlier runs of the same key) and moves a run to a larger
	// profile when the predictor marks it, instead of waiting for the OOM.
	Predict bool
	// Learn sizes jobs from the workload history, without the estimator's
	// margin: a run that ran out of memory, was moved by the predictor, or
	// finished above its declared memory records what its workload needs, and the later
	// runs of that workload (those already waiting included) start on a
	// profile holding it. A job keeps the profile it asked for while that
	// holds both its declared memory and what the history has shown, so a
	// workload declared correctly is never re-sized. The predictor watches
	// only the runs sized from a declared memory (the job names no
	// profile): a job that names its profile keeps it until it actually
	// runs out, since a forecast is not proof (see predict.go).
	Learn bool
	// Reserve holds a GPU for a job that has waited longer than
	// starveFactor times its own run time (migpro only).
	Reserve bool
	// ReserveAfter, in seconds, is the agent's --reserve-after: a job
	// that has waited longer gets a reservation as the agent gives one to
	// a local caller (partitioner.Starving, on nodes of
	// partitioner.MinReserveGPUs GPUs or more), with no backfill over it.
	ReserveAfter float64
	// ReserveRunFactor, when set, makes the limit of the agent's rule k
	// times the mean run time of the runs finished so far (at least
	// ReserveAfter), so it follows how long the node's runs last; nothing
	// is reserved before a run has finished. ReserveLarge limits the rule
	// to requests for more than half of a GPU's compute slices (the 4g and
	// 7g of issue 28's p95 target), and ReserveAnyNode lifts the
	// partitioner.MinReserveGPUs limit; ReserveNearEmpty reserves only
	// while some GPU that offers the profile has at most half its compute
	// slices in use, so a drain is short. ReserveOracle holds, instead of
	// the partitioner's choice (Partitioner.ReserveFor), the placement
	// whose runs in the way end first, as the replay alone knows them (no
	// agent knows when a run will end): it measures what a perfect choice
	// of the GPU to drain would buy. All five are trials of the
	// reservation frontier (frontier.go), not the agent's rule: simulator
	// only.
	ReserveRunFactor                                              float64
	ReserveLarge, ReserveAnyNode, ReserveNearEmpty, ReserveOracle bool
	// Exact serves every request exactly the profile it asked for
	// (partitioner.Plan and Allocate), as the agent serves a pod that asks
	// for a per-profile resource. Without it migpro and reachability serve
	// as the agent serves a local caller that accepts a larger instance
	// (PlanHolding and AllocateHolding, AllocRequest.Larger): on a larger
	// instance when the profile would wait, and widened in place.
	Exact bool
	// PCIeAware prefers, for PCIe-heavy jobs, the GPU with the fewest
	// PCIe-heavy runs.
	PCIeAware bool
	// Plan lets a planner over the known queue move up to planMoves waiting
	// jobs to the front at every planEvery-th arrival (migpro only; see
	// lookahead.go).
	// migpro+plan pairs it with Reserve, which keeps a job the plans keep
	// passing over from starving.
	Plan bool
	// PackFirst makes each scan serve first the waiting jobs whose
	// placement strands no compute slice the waiting requests could use,
	// then the others (see pack.go).
	PackFirst bool
	// Widen starts a job that names no profile on the profile with the
	// same memory and more compute slices when those slices would
	// otherwise idle (see widen.go).
	Widen bool
	// BatchShortest serves the queue shortest expected run first once no
	// job has arrived for a while, until the next arrival (see batch.go).
	BatchShortest bool
}

// Policies are the standard policies: (1) sequential, (2) static, (3)
// first-fit, the plain reachability count, (4) migpro, migpro with
// reservations against starvation, (5) migpro with prediction, (6) migpro
// with the queue orderings A (smallest first) and B (FIFO) and the
// largest-first ordering, migpro's PCIe-aware GPU choice, and migpro with
// reservations, a planner over the known queue, packing first, widening,
// the batch order and the workload history.
func Policies() []Strategy {
	return []Strategy{
		{Name: "sequential", Kind: Static, FullGPU: true, Layout: "all-full"},
		{Name: "static", Kind: Static},
		{Name: "first-fit", Kind: FirstFit},
		{Name: "nvidia-dra", Kind: NvidiaDRA, DestroyAtEnd: true},
		{Name: "hami", Kind: HAMi, DestroyAtEnd: true},
		{Name: "reachability", Kind: Reachability},
		{Name: "migpro", Kind: Migpro},
		{Name: "migpro/exact", Kind: Migpro, Exact: true},
		{Name: "migpro+reserve", Kind: Migpro, Reserve: true},
		{Name: "migpro+reserve-after", Kind: Migpro, ReserveAfter: 120},
		{Name: "migpro+predict", Kind: Migpro, Predict: true},
		{Name: "migpro/A-size", Kind: Migpro, Order: SmallFirst},
		{Name: "migpro/A-largest", Kind: Migpro, Order: LargeFirst},
		{Name: "migpro/B-fifo", Kind: Migpro, Order: FIFO},
		{Name: "migpro+pcie", Kind: Migpro, PCIeAware: true},
		{Name: "migpro+plan", Kind: Migpro, Reserve: true, Plan: true, PackFirst: true, Widen: true, BatchShortest: true, Learn: true},
	}
}

// Holding reports whether the policy serves as the agent serves a local
// caller that accepts a larger instance (PlanHolding and AllocateHolding):
// migpro and reachability, unless Exact or the planner's own placement.
func (s Strategy) Holding() bool {
	return (s.Kind == Migpro || s.Kind == Reachability) && !s.Plan && !s.Exact
}

// Serves says, in a line, which of the agent's callers a policy's figures
// are for, or "" for a policy the agent does not run.
func (s Strategy) Serves() string {
	switch {
	case s.SimulatorOnly():
		return ""
	case s.Holding():
		return "as the agent serves a local caller that accepts a larger instance (\"larger\": true); pods asking for a per-profile resource get exactly their profile: --policies migpro/exact"
	}
	return "as the agent serves a pod asking for a per-profile resource: exactly the profile asked for"
}

// SimulatorOnly reports whether the agent cannot run this policy: the
// agent's --policy offers first-fit, reachability and migpro, with arrival
// order and backfill, and --reserve-after (ReserveAfter); baselines and the extras (reservations by wait,
// the planner, packing first, widening, the batch order, the history, the
// predictor's moves, the other queue orders, the PCIe-aware choice) exist
// only in the replay.
func (s Strategy) SimulatorOnly() bool {
	plain := Strategy{Name: s.Name, Kind: s.Kind, ReserveAfter: s.ReserveAfter, Exact: s.Exact}
	if s != plain || (s.Exact && s.ReserveAfter > 0) {
		return true // the agent reserves for local callers only, not for pods
	}
	return s.Kind != FirstFit && s.Kind != Reachability && s.Kind != Migpro
}

// simulatorOnly is SimulatorOnly for a policy name as results carry it.
func simulatorOnly(name string) bool {
	ps, err := ParsePolicies(name)
	return err != nil || len(ps) != 1 || ps[0].SimulatorOnly()
}

// PolicyNames lists the standard policies' names.
func PolicyNames() []string {
	var out []string
	for _, p := range Policies() {
		out = append(out, p.Name)
	}
	return out
}

// ParsePolicies turns a comma-separated list of names ("all" for every
// standard policy) into policies. A static policy may name its layout as
// static:LAYOUT.
func ParsePolicies(list string) ([]Strategy, error) {
	if strings.TrimSpace(list) == "all" {
		return Policies(), nil
	}
	var out []Strategy
	seen := map[string]bool{}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		base, layout, hasLayout := strings.Cut(name, ":")
		var found *Strategy
		for _, p := range Policies() {
			if p.Name == base {
				found = &p
				break
			}
		}
		if found == nil {
			return nil, fmt.Errorf("unknown policy %q (known: %s, or all)", name, strings.Join(PolicyNames(), ", "))
		}
		if hasLayout {
			if found.Kind != Static || found.FullGPU {
				return nil, fmt.Errorf("policy %q: only static takes a layout", name)
			}
			if _, err := LayoutByName(layout); err != nil {
				return nil, fmt.Errorf("policy %q: %w", name, err)
			}
			found.Layout, found.Name = layout, name
		}
		if seen[found.Name] {
			return nil, fmt.Errorf("policy %q given twice", name)
		}
		seen[found.Name] = true
		out = append(out, *found)
	}
	return out, nil
}
