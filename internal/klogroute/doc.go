// Package klogroute sends what the Kubernetes libraries log through klog to
// the daemon's logrus logger. It is its own package so that only the binaries
// that link client-go import klog: the hook, which must stay a static binary
// without cgo, imports internal/cli but not this.
package klogroute
