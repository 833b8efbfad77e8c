// Package predictor forecasts a container's peak GPU memory from its memory
// series and decides, once, when it must move to a larger MIG profile.
//
// A Predictor follows one container. Observe takes one sample in O(1) time
// and without allocating, and returns a Decision exactly once: on the sample
// where the container is marked. Two algorithms share that interface:
//
//   - Baseline is the thesis's Algorithm 1: a least-squares line through the
//     peak-since-start series from the first sample, forecast a·T+b+z·σ at
//     a known horizon T (times a fitted physical/requested ratio when the
//     shim reports requested bytes), compared with capacity once the
//     forecast has converged, and never again.
//   - Migpro fits sliding windows of the same series, marks on time to OOM
//     when the horizon is unknown, and marks only on sustained growth, so a
//     warm-up, a plateau, bursts or a periodic peak do not trigger it.
//
// The agent wires it to telemetry in a few lines: one Predictor per
// container, fed from the telemetry service's sample callback with the NVML
// samples (the instance's physical use, which is what runs out) as Used and
// the shim's latest requested bytes as Requested, t in seconds since the
// container registered. On a mark it annotates and evicts the pod and records
// Decision.Profile as the readmission profile.
//
//	p, err := predictor.New(predictor.Config{Capacity: usable, Profiles: sizes, ContextBytes: ctx})
//	...
//	if d, marked := p.Observe(predictor.Sample{T: t, Used: used, Requested: req}); marked {
//		evict(container, d)
//	}
//
// Subpackages: trace reads and writes the CSV trace format, tracegen makes
// the synthetic traces in testdata (go generate), and eval scores a
// configuration on traces for migctl predict.
package predictor
