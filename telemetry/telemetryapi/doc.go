// Package telemetryapi holds the plain types of the agent's telemetry API
// (registration, endpoint, top), with no dependencies beyond the standard
// library, so the hook and migctl can speak it without pulling in the
// agent's metrics and server code.
package telemetryapi
