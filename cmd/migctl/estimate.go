package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/migpro/migpro/estimator"
	"github.com/migpro/migpro/gpu/simgpu"
)

func init() {
	register("estimate", "pick a workload's first profile from declared memory, a model size or history", runEstimate)
}

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

func runEstimate(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("estimate", flag.ContinueOnError)
	model := fs.String("gpu", "", "GPU model ("+strings.Join(simgpu.Models(), ", ")+")")
	memory := fs.String("memory", "", "declared memory, as the "+estimator.AnnotationMemory+" annotation (e.g. 7Gi)")
	params := fs.String("params", "", "parameter count for the size formula (e.g. 7e9 or 7B)")
	dtype := fs.String("dtype", "bf16", "parameter type: fp16, bf16, fp32, int8, or bytes per parameter")
	training := fs.Bool("training", false, "size for training (gradients, Adam states, activations)")
	var m estimator.Model
	fs.Uint64Var(&m.Batch, "batch", 0, "batch size")
	fs.Uint64Var(&m.Seq, "seq", 0, "sequence length")
	fs.Uint64Var(&m.Layers, "layers", 0, "transformer layers")
	fs.Uint64Var(&m.Hidden, "hidden", 0, "hidden size")
	historyFile := fs.String("history", "", "history store of earlier peaks")
	key := fs.String("key", "", "workload key in the history store")
	context := fs.String("context", "512Mi", "CUDA context overhead")
	margin := fs.Float64("margin", 0.10, "headroom on formula and history estimates")
	output := fs.String("output", "text", "text or json")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q; %s", fs.Arg(0), estimateUsage)
	}
	if *model == "" {
		return usagef("--gpu is required; %s", estimateUsage)
	}
	if *output != "text" && *output != "json" {
		return usagef("--output %q: want text or json", *output)
	}
	if *margin < 0 || *margin > 10 {
		return usagef("--margin %v: want a fraction such as 0.1", *margin)
	}
	profs, err := modelProfileSizes(*model)
	if err != nil {
		return usagef("--gpu: %v", err)
	}
	est := estimator.Estimator{GPU: strings.ToUpper(*model), Margin: *margin, Profiles: profs}
	if est.ContextBytes, err = parseCapacity(*context); err != nil {
		return usagef("--context: %v", err)
	}
	w := estimator.Workload{Key: *key}
	if *memory != "" {
		w.Annotations = map[string]string{estimator.AnnotationMemory: *memory}
	}
	if *params != "" {
		if m.Params, err = parseCount(*params); err != nil {
			return usagef("--params: %v", err)
		}
		if m.DTypeBytes, err = parseDType(*dtype); err != nil {
			return usagef("--dtype: %v", err)
		}
		m.Training = *training
		w.Model = &m
	}
	if *historyFile != "" {
		if *key == "" {
			return usagef("--history needs --key")
		}
		if est.History, err = estimator.OpenHistory(*historyFile); err != nil {
			return usageError{err}
		}
	}
	c, err := est.Estimate(w)
	if err != nil && !errors.Is(err, estimator.ErrTooLarge) {
		return usageError{err}
	}
	if *output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(estimateJSON{
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
