package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/migpro/migpro/internal/ctl"
	"github.com/migpro/migpro/internal/quietlog"
	"github.com/migpro/migpro/partitioner"
)

const defaultDemoNode = "a100-40gb:2,h100-80gb:1"

type demoOptions struct {
	spec      string
	seed      int64
	requests  int
	noPredict bool
}

func newDemoCmd() *cobra.Command {
	o := &demoOptions{}
	const short = "watch the partitioner serve a stream of requests on a simulated node"
	cmd := &cobra.Command{
		Use:   "demo",
		Short: short,
		Long: short + ".\n\nAct one replays a request stream on a simulated node and draws each placement;\n" +
			"act two shows a prediction and a move on a real agent.",
		Example: "  migpro-lab demo\n  migpro-lab demo --simulate a100-40gb:1 --requests 20 --no-predict",
		Args:    ctl.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.requests < 1 {
				return ctl.Usagef("--requests must be at least 1")
			}
			return o.run(cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.spec, "simulate", defaultDemoNode, "simulated node, MODEL[:COUNT][,MODEL[:COUNT]…]")
	f.Int64Var(&o.seed, "seed", 7, "seed of the request stream and simulated UUIDs")
	f.IntVar(&o.requests, "requests", 40, "number of allocate and release operations")
	f.BoolVar(&o.noPredict, "no-predict", false, "skip the second act (prediction and move on the real agent)")
	return cmd
}

func (o *demoOptions) run(stdout io.Writer) error {
	node, cleanup, err := ctl.NewSimNode(o.spec, o.seed)
	if err != nil {
		return err
	}
	defer cleanup()
	part, err := partitioner.New(node, partitioner.WithLogger(quietlog.New()))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Act 1: the partitioner on a simulated node %s, policy %s, %d operations (seed %d)\n\n", o.spec, partitioner.DefaultPolicy.Name(), o.requests, o.seed)
	ops := demoStream(part.Profiles(), o.requests, o.seed)
	got, err := replayDemo(part, ops, stdout)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nmigpro %s. Final layouts:\n\n", got.summary())
	ctl.DrawLayouts(stdout, part.GPUs(), part.Instances())
	fmt.Fprintln(stdout, "Legend: [profile | idle or in-use | MIG UUID prefix], · = free memory slot.")

	// The same stream under first-fit placement, for comparison.
	ffNode, ffCleanup, err := ctl.NewSimNode(o.spec, o.seed)
	if err != nil {
		return err
	}
	defer ffCleanup()
	ff, err := partitioner.New(ffNode, partitioner.WithPolicy(partitioner.FirstFit{}), partitioner.WithLogger(quietlog.New()))
	if err != nil {
		return err
	}
	base, err := replayDemo(ff, ops, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nThe same stream with first-fit placement: %s.\n", base.summary())
	if o.noPredict {
		return nil
	}
	return demoPrediction(stdout, o.seed)
}

// demoOp is one operation of the demo's stream: allocate a profile, or
// release what the free-th allocate got.
type demoOp struct {
	profile string
	free    int
}

func owner(k int) string { return "alloc-" + strconv.Itoa(k) }

// demoStats counts what happened to the stream's requests: served at once
// or after waiting, withdrawn while waiting, or still waiting at the end.
type demoStats struct {
	requests, served, later, waited, withdrawn, steps int
}

// stillWaiting is the requests that were never served nor withdrawn.
func (s demoStats) stillWaiting() int { return s.requests - s.served - s.withdrawn }

// plural is "1 request" or "n requests".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// summary is one sentence on the stats.
func (s demoStats) summary() string {
	return fmt.Sprintf("served %d of %s (%d after waiting), %d withdrawn while waiting, %d still waiting; %s",
		s.served, plural(s.requests, "request"), s.later, s.withdrawn, s.stillWaiting(), plural(s.steps, "NVML step"))
}

// waiting is a request that found no room, queued as the agent queues a
// local caller's: it is served when a release makes room.
type waiting struct {
	k       int
	profile string
}

// replayDemo runs the operations, narrating each to w when w is not nil. A
// request that must wait joins a queue, as it would at the agent; after
// each release the queue is tried in order, and a release of a request
// still waiting withdraws it. Every operation prints one numbered line.
func replayDemo(part *partitioner.Partitioner, ops []demoOp, w io.Writer) (demoStats, error) {
	var st demoStats
	say := func(format string, args ...any) {
		if w != nil {
			fmt.Fprintf(w, format, args...)
		}
	}
	ctx := context.Background()
	held := map[int]string{}
	var queue []waiting
	allocs := 0
	for i, op := range ops {
		prefix := fmt.Sprintf("[%3d] ", i+1)
		if op.profile == "" {
			uuid, ok := held[op.free]
			if !ok {
				queue = slices.DeleteFunc(queue, func(q waiting) bool { return q.k == op.free })
				st.withdrawn++
				say("%srelease #%-3d withdrawn while it waited: it held nothing\n", prefix, op.free)
				continue
			}
			inst, err := part.Release(uuid)
			if err != nil {
				return st, err
			}
			delete(held, op.free)
			say("%srelease #%-3d %-10s GPU %d slot %d -> idle, kept for reuse\n", prefix, op.free, inst.Profile, inst.GPU, inst.Placement.Start)
			// The room may serve requests that wait, in order.
			var still []waiting
			for _, q := range queue {
				inst, plan, err := part.Allocate(ctx, q.profile, owner(q.k))
				st.steps += len(plan.Steps)
				switch {
				case errors.Is(err, partitioner.ErrMustWait):
					still = append(still, q)
					continue
				case err != nil:
					return st, err
				}
				st.served++
				st.later++
				held[q.k] = inst.UUID
				say("      alloc   #%-3d %-10s served after waiting: GPU %d slot %d: %s\n", q.k, q.profile, inst.GPU, inst.Placement.Start, describePlan(plan))
			}
			queue = still
			continue
		}
		allocs++
		st.requests++
		inst, plan, err := part.Allocate(ctx, op.profile, owner(allocs))
		st.steps += len(plan.Steps)
		switch {
		case errors.Is(err, partitioner.ErrMustWait):
			st.waited++
			queue = append(queue, waiting{k: allocs, profile: op.profile})
			say("%salloc   #%-3d %-10s waits: no room without touching in-use instances\n", prefix, allocs, op.profile)
			continue
		case err != nil:
			return st, err
		}
		st.served++
		held[allocs] = inst.UUID
		say("%salloc   #%-3d %-10s GPU %d slot %d: %s\n", prefix, allocs, op.profile, inst.GPU, inst.Placement.Start, describePlan(plan))
	}
	return st, nil
}

func describePlan(p partitioner.Plan) string {
	if p.Reuse != nil {
		return "reused an idle instance, no NVML call"
	}
	destroys := 0
	for _, s := range p.Steps {
		if s.Kind == partitioner.StepDestroy {
			destroys++
		}
	}
	what := "created"
	if destroys > 0 {
		what = fmt.Sprintf("destroyed %d idle, created", destroys)
	}
	return fmt.Sprintf("%s; layouts reachable on the GPU %d -> %d", what, p.Before, p.Reachable)
}

// demoStream makes a deterministic mix of requests, mostly small profiles as
// in inference fleets, with releases of earlier allocations in between.
// profiles come smallest first, as Partitioner.Profiles lists them.
func demoStream(profiles []string, n int, seed int64) []demoOp {
	r := rand.New(rand.NewSource(seed))
	var plain []string
	for _, p := range profiles {
		if !strings.Contains(p, "+") {
			plain = append(plain, p)
		}
	}
	var ops []demoOp
	allocs := 0
	live := []int{}
	for len(ops) < n {
		if len(live) > 0 && r.Float64() < 0.35 {
			i := r.Intn(len(live))
			ops = append(ops, demoOp{free: live[i]})
			live = append(live[:i], live[i+1:]...)
			continue
		}
		// Weight small profiles: index drawn from a triangular distribution.
		i := min(r.Intn(len(plain)), r.Intn(len(plain)))
		allocs++
		live = append(live, allocs)
		ops = append(ops, demoOp{profile: plain[i]})
	}
	return ops
}
