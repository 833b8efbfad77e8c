// Package gputest holds the fakes of what the rest of migpro reads from the
// GPU layer, for tests: Memory, a fixed reading of each MIG instance's
// memory (the telemetry poller's source). The simulated GPU (gpu/simgpu)
// stands in for a whole node.
package gputest
