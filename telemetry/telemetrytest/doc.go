// Package telemetrytest runs a real telemetry.Service for the tests of the
// packages that talk to it: the hook, the shim tests, migctl top.
package telemetrytest
