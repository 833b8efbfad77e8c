// Package predictor forecasts a container's peak GPU memory from its memory
// series and decides, once, when it must move to a larger MIG profile.
//
// A Predictor follows one container. Observe takes one sample in O(1) time
// and without allocating, and returns a Mark exactly once: on the sample
// where the container is marked. Two algorithms share that interface:
//
//   - Baseline is the plain algorithm: a least-squares line through the
//     peak-since-start series from the first sample, forecast a·T+b+z·σ at
//     a known horizon T (times a fitted physical/requested ratio when the
//     shim reports requested bytes), compared with capacity once the
//     forecast has converged, and never again.
//   - Migpro fits sliding windows of the same series, marks on time to OOM
//     when the horizon is unknown, and marks only on sustained growth, so a
//     warm-up, a plateau, bursts or a periodic peak do not trigger it.
//
// The agent wires it to telemetry with a Tracker, which keeps one Predictor
// per container and is safe for concurrent use. Feed it, as Used, the memory
// that runs out: max(shim, NVML), where NVML's figure is the instance's used
// memory (the CUDA context plus the framework's whole pool, PyTorch's
// reserved memory) and the shim's is the process's live driver-level
// allocations; pass the shim's latest requested bytes as Requested, with t
// in seconds since the container registered, and pass the Config through
// ForSeconds, since such a series includes model loading. On a mark,
// annotate and evict the pod with Mark.Profile as the readmission
// profile; when the container ends, Stop returns its peak for the
// estimator's history.
//
//	tr := predictor.NewTracker()
//	tr.Start(id, predictor.ForSeconds(predictor.Config{Capacity: usable, Profiles: sizes, ContextBytes: ctx}))
//	series.OnSample(func(id string, s telemetry.Reading) {
//		if d, marked := tr.Observe(id, toSample(s)); marked {
//			evict(id, d)
//		}
//	})
//	peak, _ := tr.Stop(id) // container ended
//	history.Record(key, peak, time.Now())
//
// Subpackages: trace reads and writes the CSV trace format, tracegen makes
// the synthetic traces in testdata (go generate), and eval scores a
// configuration on traces for migctl predict.
package predictor
