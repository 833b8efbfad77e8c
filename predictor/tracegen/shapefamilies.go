package tracegen

// TunedShapes are issue 29's shapes, rebuilt from their descriptions, with
// the parameters the descriptions give; the predictor is tuned on them.
func TunedShapes() []Shape {
	return []Shape{
		{Name: "serving-staircase", Duration: 300,
			gen: servingStaircase{load: span{3.3, 3.7}, loadSec: span{5.5, 6.5}, step: span{0.43, 0.47}, hold: span{2, 6}, top: span{0.73, 0.77}}.gen},
		{Name: "vllm-start", Duration: 240,
			gen: vllmStart{rate: span{0.26, 0.30}, loadTo: span{0.58, 0.62}, spike: span{0.3, 1.0}, final: span{0.94, 0.96}}.gen},
		{Name: "training-sawtooth", Duration: 600,
			gen: teeth{peak: span{0.85, 0.95}, amp: span{0.3, 0.45}, period: span{4, 8}}.gen},
		{Name: "kv-steps", Growing: true, Duration: 300,
			gen: kvSteps{load: span{3, 5}, idle: span{5, 20}, step: span{0.25, 0.25}, gap: span{1.4, 1.6}}.gen},
		{Name: "fast-growth", Growing: true, Duration: 120,
			gen: linearGrowth{from: span{2.9, 3.1}, idle: span{2, 10}, rate: span{0.45, 0.55}}.gen},
		{Name: "bursty-kv-horizon", Growing: true, WithHorizon: true, Duration: 900,
			gen: burstyKV{load: span{3, 4}, gap: span{4, 10}, burst: span{0.3, 0.8}, kept: span{0.3, 0.6}}.gen},
		{Name: "creeping-sawtooth", Growing: true, Duration: 900,
			gen: teeth{peak: span{0.84, 0.86}, amp: span{0.3, 0.45}, period: span{4, 8}, creep: span{0.002, 0.005}}.gen},
		{Name: "creeping-sawtooth-horizon", Growing: true, WithHorizon: true, Duration: 900,
			gen: teeth{peak: span{0.84, 0.86}, amp: span{0.3, 0.45}, period: span{4, 8}, creep: span{0.002, 0.005}}.gen},
	}
}

// HeldOutShapes are the same generators with wider parameters and seeds of
// their own (from 1 000 000). They were written and committed before any
// tuning on TunedShapes, and their results are read only to report them:
// see docs/predictor-results.md.
func HeldOutShapes() []Shape {
	const s0 = 1_000_000
	return []Shape{
		{Name: "serving-staircase-ho", Seed0: s0, Duration: 300,
			gen: servingStaircase{load: span{2, 5}, loadSec: span{3, 12}, step: span{0.25, 0.7}, hold: span{1.5, 8}, top: span{0.6, 0.85}}.gen},
		{Name: "vllm-start-ho", Seed0: s0, Duration: 300,
			gen: vllmStart{rate: span{0.12, 0.6}, loadTo: span{0.45, 0.7}, spike: span{0.2, 1.5}, final: span{0.88, 0.96}}.gen},
		{Name: "training-sawtooth-ho", Seed0: s0, Duration: 600,
			gen: teeth{peak: span{0.75, 0.95}, amp: span{0.2, 0.5}, period: span{3, 12}}.gen},
		{Name: "kv-steps-ho", Seed0: s0, Growing: true, Duration: 400,
			gen: kvSteps{load: span{2, 6}, idle: span{0, 40}, step: span{0.1, 0.5}, gap: span{0.8, 3}}.gen},
		{Name: "fast-growth-ho", Seed0: s0, Growing: true, Duration: 150,
			gen: linearGrowth{from: span{2, 3.5}, idle: span{0, 20}, rate: span{0.3, 0.6}}.gen},
		{Name: "bursty-kv-horizon-ho", Seed0: s0, Growing: true, WithHorizon: true, Duration: 1200,
			gen: burstyKV{load: span{2, 5}, gap: span{3, 15}, burst: span{0.2, 1.2}, kept: span{0.2, 0.7}}.gen},
		{Name: "creeping-sawtooth-ho", Seed0: s0, Growing: true, Duration: 3000,
			gen: teeth{peak: span{0.80, 0.90}, amp: span{0.2, 0.5}, period: span{3, 12}, creep: span{0.001, 0.006}}.gen},
		{Name: "creeping-sawtooth-horizon-ho", Seed0: s0, Growing: true, WithHorizon: true, Duration: 3000,
			gen: teeth{peak: span{0.80, 0.90}, amp: span{0.2, 0.5}, period: span{3, 12}, creep: span{0.001, 0.006}}.gen},
	}
}
