// Package wire is the shim's telemetry datagram: its fixed layout, Decode
// and Encode. It imports only the standard library, so that readers of the
// shim's samples (the telemetry service, migctl record) share it without
// linking the service.
package wire
