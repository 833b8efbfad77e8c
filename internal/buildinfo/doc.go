// Package buildinfo reads the version of the running binary from the Go build
// information (module version, VCS revision, time and modified flag, Go
// version), so every migpro binary reports its version the same way.
package buildinfo
