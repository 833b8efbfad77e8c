// Package estimator picks the first MIG profile for a workload before it has
// run, and keeps what later runs teach.
//
// A need comes from, in order of trust: a declared annotation
// (migpro.dev/gpu-memory: 7Gi, parsed strictly as a Kubernetes quantity), a
// transformer size formula (weights, gradients and optimizer states for
// training, KV cache or activations), and the largest peak of earlier runs of
// the same workload key, which overrides the other two when it is higher.
// The CUDA context overhead and, for estimates, a margin are added, and the
// tightest profile of the GPU model's list is chosen. Every choice carries a
// one-line explanation for events and logs.
//
// The package knows nothing about NVML or any GPU model: callers pass a
// []ProfileSize, so it works for whatever profiles a device reports. The
// predictor uses Pick for its readmission profile, so both choose alike.
package estimator
