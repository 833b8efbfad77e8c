// Package hook is the OCI hook: it registers a starting container with the
// agent and injects the telemetry shim into the container's root filesystem.
package hook
