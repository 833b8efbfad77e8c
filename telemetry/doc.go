// Package telemetry is the agent side of per-container GPU memory telemetry.
//
// A Service gives every registered container its own unixgram socket (so a
// container can only ever speak for itself), decodes the shim's fixed-size
// datagrams with a bounded, fuzzed decoder, polls instance memory through an
// NVML-like MemorySource for containers without the shim, and keeps a bounded
// ring of Samples per container. With every sample it publishes the
// container's Usage, both sources' latest figures side by side (OnUsage),
// and it answers what a container registered with (Registration), so its
// subscribers keep no copy of either. The agent feeds the predictor from
// OnUsage; users see it through the HTTP API (GET /v1/top) that
// the agent serves on its local unix socket, and migctl top.
//
// Every input from a container is untrusted: datagrams are size-, rate- and
// process-count-bounded, and anything malformed is dropped and counted.
package telemetry
