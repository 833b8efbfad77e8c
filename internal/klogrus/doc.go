// Package klogrus routes klog, the logger of client-go and the other
// Kubernetes libraries, into a daemon's logrus logger, so the daemon writes
// one format. It is its own package because klog links os/user: binaries
// that must stay static (migpro-hook) do not import it.
package klogrus
