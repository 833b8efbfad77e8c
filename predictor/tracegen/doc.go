// Package tracegen makes the synthetic memory traces the predictor is scored
// on: growth that ends in an OOM on a 10 GiB instance (a Qwen2-7B and a
// Llama-3 inference run), and shapes that never exceed it but look alarming to a naive
// fit (bursts, sawtooth, epochs, warm-up then plateau). RealFamilies and
// HeldOutFamilies are series in seconds shaped after what frameworks do
// (vLLM, Hugging Face generate, PyTorch's caching allocator, training),
// sampled at the shim's rate as the agent merges it with NVML, and at
// NVML's. Every family is a
// deterministic function of a seed, so the checked-in files can be
// regenerated bit for bit and tests can sweep many seeds of the same shape.
// Issue 29's NVML-only shapes: TunedShapes (the predictor is tuned on
// them), HeldOutShapes (wider parameters), and the sealed sets
// SealedShapes and Sealed2Shapes to Sealed9Shapes (generators of their
// own, each written apart from the predictor, scored once as held-out data
// and tuned on only after that).
package tracegen
