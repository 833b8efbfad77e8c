package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/migpro/migpro/estimator"
	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/internal/ctl"
)

const estimateUsage = "usage: migctl estimate --gpu MODEL [--memory QTY] [--params N --dtype fp16|bf16|fp32|int8 [--training] [--batch B --seq S --layers L --hidden H]] [--history FILE --key KEY] [--context QTY] [--margin F] [--output text|json]"

// estimateJSON is the machine-readable choice.
type estimateJSON struct {
	Profile     string           `json:"profile"`
	Fits        bool             `json:"fits"`
	Source      estimator.Source `json:"source"`
	NeedBytes   uint64           `json:"needBytes"`
	TotalBytes  uint64           `json:"totalBytes"`
	Explanation string           `json:"explanation"`
}

type estimateOptions struct {
	out                   ctl.OutputOptions
	model, memory, params string
	dtype, history, key   string
	context               string
	training              bool
	margin                float64
	shape                 estimator.Model
}

func newEstimateCmd() *cobra.Command {
	o := &estimateOptions{}
	const short = "pick a workload's first profile from declared memory, a model size or history"
	cmd := &cobra.Command{
		Use:     "estimate",
		Short:   short,
		Long:    long(short, "From declared memory, a model's parameter count or recorded peaks, picks the\nsmallest profile with room."),
		Example: "  migctl estimate --gpu h100-80gb --memory 7Gi\n  migctl estimate --gpu a100-40gb --params 7e9 --output json",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return ctl.Usagef("unexpected argument %q; %s", args[0], estimateUsage)
			}
			if o.model == "" {
				return ctl.Usagef("--gpu is required; %s", estimateUsage)
			}
			if err := o.out.Complete(cmd.Flags()); err != nil {
				return err
			}
			return o.run(cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.model, "gpu", "", "GPU model ("+strings.Join(simgpu.Models(), ", ")+")")
	f.StringVar(&o.memory, "memory", "", "declared memory: bytes, or a quantity such as 7Gi, 7GiB or 7G (what the "+estimator.AnnotationMemory+" annotation declares)")
	f.StringVar(&o.params, "params", "", "parameter count for the size formula (e.g. 7e9 or 7B)")
	f.StringVar(&o.dtype, "dtype", "bf16", "parameter type: fp16, bf16, fp32, int8, or bytes per parameter")
	f.BoolVar(&o.training, "training", false, "size for training (gradients, Adam states, activations)")
	f.Uint64Var(&o.shape.Batch, "batch", 0, "batch size")
	f.Uint64Var(&o.shape.Seq, "seq", 0, "sequence length")
	f.Uint64Var(&o.shape.Layers, "layers", 0, "transformer layers")
	f.Uint64Var(&o.shape.Hidden, "hidden", 0, "hidden size")
	f.StringVar(&o.history, "history", "", "history store of earlier peaks")
	f.StringVar(&o.key, "key", "", "workload key in the history store")
	f.StringVar(&o.context, "context", "512Mi", "CUDA context overhead")
	f.Float64Var(&o.margin, "margin", 0.10, "headroom on formula and history estimates")
	o.out.AddFlagsTo(cmd)
	_ = cmd.RegisterFlagCompletionFunc("gpu", ctl.CompleteModels)
	_ = cmd.RegisterFlagCompletionFunc("dtype", ctl.Words("fp16", "bf16", "fp32", "int8"))
	cmd.ValidArgsFunction = cobra.NoFileCompletions
	return cmd
}

func (o *estimateOptions) run(stdout io.Writer) error {
	if o.margin < 0 || o.margin > 10 {
		return ctl.Usagef("--margin %v: want a fraction such as 0.1", o.margin)
	}
	profs, err := modelProfileSizes(o.model)
	if err != nil {
		return ctl.Usagef("--gpu: %v", err)
	}
	est := estimator.Estimator{GPU: strings.ToUpper(o.model), Margin: o.margin, Profiles: profs}
	if est.ContextBytes, err = ctl.ParseBytes(o.context); err != nil {
		return ctl.Usagef("--context: %v", err)
	}
	w := estimator.Workload{Key: o.key}
	if o.memory != "" {
		// The one byte parser of the command line; the estimator gets
		// the bytes as the annotation would carry them.
		b, err := ctl.ParseBytes(o.memory)
		if err != nil {
			return ctl.Usagef("--memory: %v", err)
		}
		w.Annotations = map[string]string{estimator.AnnotationMemory: strconv.FormatUint(b, 10)}
	}
	if o.params != "" {
		m := o.shape
		if m.Params, err = parseCount(o.params); err != nil {
			return ctl.Usagef("--params: %v", err)
		}
		if m.DTypeBytes, err = parseDType(o.dtype); err != nil {
			return ctl.Usagef("--dtype: %v", err)
		}
		m.Training = o.training
		w.Model = &m
	}
	if o.history != "" {
		if o.key == "" {
			return ctl.Usagef("--history needs --key")
		}
		if est.History, err = estimator.OpenHistory(o.history); err != nil {
			return ctl.UsageError{Err: err}
		}
	}
	c, err := est.Estimate(w)
	if err != nil && !errors.Is(err, estimator.ErrTooLarge) {
		return ctl.UsageError{Err: err}
	}
	if o.out.JSON() {
		if jerr := ctl.WriteJSON(stdout, estimateJSON{
			Profile: c.Profile.Name, Fits: err == nil, Source: c.Source,
			NeedBytes: c.Need.Bytes, TotalBytes: c.Need.Total(), Explanation: c.Explanation,
		}); jerr != nil {
			return jerr
		}
	} else {
		fmt.Fprintln(stdout, c.Explanation)
	}
	// A need no profile can hold is an answer, not bad input: exit 1.
	return err
}

// modelProfileSizes is a simulated GPU model's profiles as the estimator
// sizes them.
func modelProfileSizes(model string) ([]estimator.ProfileSize, error) {
	profs, err := simgpu.ModelProfiles(model)
	if err != nil {
		return nil, err
	}
	out := make([]estimator.ProfileSize, 0, len(profs))
	for _, p := range profs {
		out = append(out, estimator.ProfileSize{Name: p.Name, MemoryBytes: p.MemoryMiB << 20, Slices: p.Slices})
	}
	return out, nil
}

// parseCount reads a count such as 7000000000, 7e9, 7B or 350M.
func parseCount(s string) (uint64, error) {
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "B"):
		mult, s = 1e9, strings.TrimSuffix(s, "B")
	case strings.HasSuffix(s, "M"):
		mult, s = 1e6, strings.TrimSuffix(s, "M")
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 || f*mult >= 1e18 {
		return 0, fmt.Errorf("%q: want a positive count such as 7e9, 7B or 350M", s)
	}
	return uint64(f * mult), nil
}

func parseDType(s string) (float64, error) {
	switch strings.ToLower(s) {
	case "fp16", "bf16", "float16", "bfloat16":
		return 2, nil
	case "fp32", "float32":
		return 4, nil
	case "int8", "fp8":
		return 1, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 || f > 8 {
		return 0, fmt.Errorf("%q: want fp16, bf16, fp32, int8 or bytes per parameter", s)
	}
	return f, nil
}
