package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/internal/ctl"
	"github.com/migpro/migpro/internal/quietlog"
	"github.com/migpro/migpro/partitioner"
)

// planOp is one operation of `migctl plan`: allocate a profile, or free the
// instance given to the K-th allocate.
type planOp struct {
	profile string           // set for an allocate
	pin     *partitioner.Pin // PROFILE@[GPU:]SLOT pins the allocate
	free    int              // 1-based allocate number, for a free
}

// planResult is the JSON answer of `migctl plan`; its keys are a stable
// interface that scripts and tests read.
type planResult struct {
	Instances []planInstance `json:"instances"`
	Steps     int            `json:"steps"`
	Waiting   []int          `json:"waiting"`
	// GPUs adds each GPU's reachability: how many maximal layouts are
	// still reachable, of how many.
	GPUs []planGPU `json:"gpus"`
}

type planGPU struct {
	GPU       int    `json:"gpu"`
	Model     string `json:"model"`
	Reachable int    `json:"reachable"`
	Maximal   int    `json:"maximal"`
}

type planInstance struct {
	GPU     int    `json:"gpu"`
	Profile string `json:"profile"`
	Start   int    `json:"start"`
	Size    int    `json:"size"`
	UUID    string `json:"uuid"`
	State   string `json:"state"`
	Alloc   *int   `json:"alloc"`
}

type planOptions struct {
	out     ctl.OutputOptions
	spec    string
	policy  string
	seed    int64
	counted string
}

func newPlanCmd() *cobra.Command {
	o := &planOptions{}
	const short = "what-if: run allocate/free operations on a simulated node"
	cmd := &cobra.Command{
		Use:   "plan OPERATION…",
		Short: short,
		Long: long(short, "Runs the operations in order on a simulated node and draws the layouts after them.\n"+
			"PROFILE allocates; PROFILE@SLOT or PROFILE@GPU:SLOT allocates at that place; free:K\n"+
			"releases what the K-th allocate got."),
		Example: "  migctl plan --simulate a100-40gb:2 1g.5gb 3g.20gb free:1 4g.20gb\n" +
			"  migctl plan --simulate a100-40gb:2,h100-80gb:1 --policy first-fit --output json 3g.40gb 1g.10gb\n" +
			"  migctl plan --simulate a100-40gb 1g.5gb@6 3g.20gb",
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.spec == "" {
				return ctl.Usagef("--simulate is required (e.g. --simulate a100-40gb:2,h100-80gb)")
			}
			if err := o.out.Complete(cmd.Flags()); err != nil {
				return err
			}
			return o.run(cmd.OutOrStdout(), args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.spec, "simulate", "", "simulated node, MODEL[:COUNT][,MODEL[:COUNT]…] (models: "+strings.Join(simgpu.Models(), ", ")+")")
	f.StringVar(&o.policy, "policy", partitioner.DefaultPolicy.Name(), "placement policy: "+strings.Join(partitioner.PolicyNames(), ", "))
	o.out.AddFlagsTo(cmd)
	f.Int64Var(&o.seed, "seed", 1, "seed for simulated UUIDs")
	f.StringVar(&o.counted, "counted", "", "comma-separated profiles reachability counts (default: every profile)")
	_ = cmd.RegisterFlagCompletionFunc("simulate", ctl.CompleteModels)
	_ = cmd.RegisterFlagCompletionFunc("policy", ctl.Words(partitioner.PolicyNames()...))
	// Operations: the profiles the --simulate node offers.
	cmd.ValidArgsFunction = func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		return ctl.ModelProfiles(o.spec), cobra.ShellCompDirectiveNoFileComp
	}
	return cmd
}

func (o *planOptions) run(stdout io.Writer, args []string) error {
	policy, err := partitioner.PolicyByName(o.policy)
	if err != nil {
		return ctl.UsageError{Err: err}
	}
	ops, err := parsePlanOps(args)
	if err != nil {
		return err
	}
	node, cleanup, err := ctl.NewSimNode(o.spec, o.seed)
	if err != nil {
		return err
	}
	defer cleanup()
	opts := []partitioner.Option{partitioner.WithPolicy(policy), partitioner.WithLogger(quietlog.New())}
	if o.counted != "" {
		opts = append(opts, partitioner.WithCountedProfiles(strings.Split(o.counted, ",")...))
	}
	part, err := partitioner.New(node, opts...)
	if err != nil {
		return ctl.UsageError{Err: err}
	}
	if err := checkProfiles(ops, part); err != nil {
		return err
	}
	res, err := applyPlanOps(part, ops)
	if err != nil {
		return err
	}
	if o.out.JSON() {
		return ctl.WriteJSON(stdout, res)
	}
	ctl.DrawLayouts(stdout, part.GPUs(), part.Instances())
	fmt.Fprintf(stdout, "policy %s: %d NVML steps, %d instances, waiting: %v\n", policy.Name(), res.Steps, len(res.Instances), res.Waiting)
	return nil
}

func parsePlanOps(args []string) ([]planOp, error) {
	if len(args) == 0 {
		return nil, ctl.Usagef("no operations: give profile names to allocate and free:K to release the K-th allocate")
	}
	ops := make([]planOp, len(args))
	for i, a := range args {
		if rest, ok := strings.CutPrefix(a, "free:"); ok {
			k, err := strconv.Atoi(rest)
			if err != nil || k < 1 {
				return nil, ctl.Usagef("operation %d: %q: free needs a positive allocate number, e.g. free:1", i+1, a)
			}
			ops[i] = planOp{free: k}
			continue
		}
		profile, where, pinned := strings.Cut(a, "@")
		op := planOp{profile: profile}
		if pinned {
			pin, err := parsePin(where)
			if err != nil {
				return nil, ctl.Usagef("operation %d: %q: %v", i+1, a, err)
			}
			op.pin = pin
		}
		ops[i] = op
	}
	return ops, nil
}

// parsePin reads SLOT or GPU:SLOT.
func parsePin(s string) (*partitioner.Pin, error) {
	gpuPart, slotPart, hasGPU := strings.Cut(s, ":")
	if !hasGPU {
		gpuPart, slotPart = "0", s
	}
	g, err1 := strconv.Atoi(gpuPart)
	slot, err2 := strconv.Atoi(slotPart)
	if err1 != nil || err2 != nil || g < 0 || slot < 0 {
		return nil, fmt.Errorf("want PROFILE@SLOT or PROFILE@GPU:SLOT with numbers")
	}
	return &partitioner.Pin{GPU: g, Start: slot}, nil
}

// checkProfiles refuses unknown profiles and illegal pins before anything
// is created.
func checkProfiles(ops []planOp, part *partitioner.Partitioner) error {
	offered := part.Profiles()
	known := map[string]bool{}
	for _, p := range offered {
		known[p] = true
	}
	for i, op := range ops {
		if op.profile != "" && !known[op.profile] {
			return ctl.Usagef("operation %d: unknown profile %q (this node offers: %s)", i+1, op.profile, strings.Join(offered, ", "))
		}
		if op.pin != nil {
			if err := part.CheckPin(op.profile, *op.pin); err != nil {
				return ctl.Usagef("operation %d: %v", i+1, err)
			}
		}
	}
	return nil
}

// applyPlanOps runs the operations in order. Allocate numbers count allocate
// operations only, 1-based, as `free:K` refers to them.
func applyPlanOps(part *partitioner.Partitioner, ops []planOp) (planResult, error) {
	ctx := context.Background()
	res := planResult{Waiting: []int{}}
	given := map[int]string{} // allocate number -> UUID while held
	allocs := 0
	for i, op := range ops {
		if op.profile != "" {
			allocs++
			inst, plan, err := part.AllocateAt(ctx, op.profile, op.pin, owner(allocs))
			res.Steps += len(plan.Steps)
			switch {
			case errors.Is(err, partitioner.ErrMustWait):
				res.Waiting = append(res.Waiting, allocs)
			case err != nil:
				return res, fmt.Errorf("operation %d: %w", i+1, err)
			default:
				given[allocs] = inst.UUID
			}
			continue
		}
		uuid, ok := given[op.free]
		if !ok {
			return res, ctl.Usagef("operation %d: free:%d: allocate %d %s", i+1, op.free, op.free, whyNotHeld(op.free, allocs, res.Waiting))
		}
		if _, err := part.Release(uuid); err != nil {
			return res, fmt.Errorf("operation %d: %w", i+1, err)
		}
		delete(given, op.free)
	}
	for _, in := range part.Instances() {
		pi := planInstance{GPU: in.GPU, Profile: in.Profile, Start: in.Placement.Start, Size: in.Placement.Size, UUID: in.UUID, State: string(in.State)}
		if k, ok := allocNumber(in.Owner); ok {
			pi.Alloc = &k
		}
		res.Instances = append(res.Instances, pi)
	}
	for _, g := range part.GPUs() {
		res.GPUs = append(res.GPUs, planGPU{GPU: g.Index, Model: g.Model, Reachable: g.Reachable, Maximal: g.Maximal})
	}
	return res, nil
}

func whyNotHeld(k, allocs int, waiting []int) string {
	for _, w := range waiting {
		if w == k {
			return "is waiting and holds nothing"
		}
	}
	if k > allocs {
		return "does not exist (yet)"
	}
	return "was already freed"
}

func owner(k int) string { return "alloc-" + strconv.Itoa(k) }

func allocNumber(owner string) (int, bool) {
	rest, ok := strings.CutPrefix(owner, "alloc-")
	if !ok {
		return 0, false
	}
	k, err := strconv.Atoi(rest)
	return k, err == nil
}
