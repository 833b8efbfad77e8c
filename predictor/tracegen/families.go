package tracegen

// RealFamilies lists the framework-shaped families the predictor was tuned
// on, quiet ones first.
func RealFamilies() []RealFamily {
	return []RealFamily{
		{Name: "vllm-0.90", Duration: 240, used: vllm(0.90, gibps(0.4, 1.2))},
		{Name: "vllm-0.95-slowload", Duration: 240, used: vllm(0.95, gibps(0.06, 0.15))},
		{Name: "hf-generate-staircase", Duration: 300, used: hfGenerate},
		{Name: "torch-pool-warmup", Duration: 240, used: poolWarmup},
		{Name: "training-settle-eval", Duration: 300, used: trainingSettle},
		{Name: "chunked-load", Duration: 240, used: chunked(4, 8, gibps(0.2, 1.5))},
		{Name: "training-slow-leak", Growing: true, Duration: 3000, used: trainingLeak},
		{Name: "fast-growth-after-load", Growing: true, Duration: 300, used: fastGrowth(100, 250)},
		{Name: "sawtooth-growth", Growing: true, Duration: 1200, used: sawtoothGrowth},
	}
}

// HeldOutFamilies are parameter sweeps of the same generators (loading
// speed, model size, gpu_memory_utilization, growth rate) that were not
// used to tune the predictor, plus the flan-t5 run. Every load ends below
// Capacity on a 10 GiB instance.
func HeldOutFamilies() []RealFamily {
	return []RealFamily{
		{Name: "vllm-0.90-load-0.15-0.4", Duration: 240, used: vllm(0.90, gibps(0.15, 0.4))},
		{Name: "vllm-0.92-load-0.1-0.5", Duration: 240, used: vllm(0.92, gibps(0.1, 0.5))},
		{Name: "vllm-0.90-load-120-300s", Duration: 480, used: vllm(0.90, seconds(120, 300))},
		{Name: "vllm-0.80-load-0.05-2", Duration: 300, used: vllm(0.80, gibps(0.05, 2))},
		{Name: "chunked-load-4-8g-0.1-0.2", Duration: 240, used: chunked(4, 8, gibps(0.1, 0.2))},
		{Name: "chunked-load-7-8.5g", Duration: 240, used: chunked(7, 8.5, gibps(0.2, 1.5))},
		{Name: "chunked-load-2-4g-0.02-0.05", Duration: 400, used: chunked(2, 4, gibps(0.02, 0.05))},
		{Name: "growth-50-100-after-load", Growing: true, Duration: 600, used: fastGrowth(50, 100)},
		{Name: "flan-t5-27", Growing: true, Duration: 600, used: flanT5},
	}
}
