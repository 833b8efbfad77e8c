package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/migpro/migpro/internal/ctl"
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
	part, err := partitioner.New(node, partitioner.WithLogger(ctl.QuietLogger()))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Act 1: the partitioner on a simulated node %s, policy %s, %d operations (seed %d)\n\n", o.spec, partitioner.DefaultPolicy.Name(), o.requests, o.seed)
	ops := demoStream(part.Profiles(), o.requests, o.seed)
	got, err := replayDemo(part, ops, stdout)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nServed %d requests, %d had to wait, %d NVML steps. Final layouts:\n\n", got.served, got.waited, got.steps)
	ctl.DrawLayouts(stdout, part.GPUs(), part.Instances())
	fmt.Fprintln(stdout, "Legend: [profile | idle or in-use | MIG UUID prefix], · = free memory slot.")

	// The same stream under first-fit placement, for comparison.
	ffNode, ffCleanup, err := ctl.NewSimNode(o.spec, o.seed)
	if err != nil {
		return err
	}
	defer ffCleanup()
	ff, err := partitioner.New(ffNode, partitioner.WithPolicy(partitioner.FirstFit{}), partitioner.WithLogger(ctl.QuietLogger()))
	if err != nil {
		return err
	}
	base, err := replayDemo(ff, ops, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nThe same stream with first-fit placement: served %d, %d had to wait, %d NVML steps.\n", base.served, base.waited, base.steps)
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

type demoStats struct{ served, waited, steps int }

// replayDemo runs the operations, narrating each to w when w is not nil.
func replayDemo(part *partitioner.Partitioner, ops []demoOp, w io.Writer) (demoStats, error) {
	var st demoStats
	say := func(format string, args ...any) {
		if w != nil {
			fmt.Fprintf(w, format, args...)
		}
	}
	held := map[int]string{}
	allocs := 0
	for i, op := range ops {
		prefix := fmt.Sprintf("[%3d] ", i+1)
		if op.profile == "" {
			uuid, ok := held[op.free]
			if !ok {
				continue
			}
			inst, err := part.Release(uuid)
			if err != nil {
				return st, err
			}
			delete(held, op.free)
			say("%srelease #%-3d %-9s GPU %d slot %d -> idle, kept for reuse\n", prefix, op.free, inst.Profile, inst.GPU, inst.Placement.Start)
			continue
		}
		allocs++
		inst, plan, err := part.Allocate(context.Background(), op.profile, owner(allocs))
		st.steps += len(plan.Steps)
		switch {
		case errors.Is(err, partitioner.ErrMustWait):
			st.waited++
			say("%salloc   #%-3d %-9s must wait: no room without touching in-use instances\n", prefix, allocs, op.profile)
			continue
		case err != nil:
			return st, err
		}
		st.served++
		held[allocs] = inst.UUID
		say("%salloc   #%-3d %-9s GPU %d slot %d: %s\n", prefix, allocs, op.profile, inst.GPU, inst.Placement.Start, describePlan(plan))
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
