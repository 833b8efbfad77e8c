// Package klogroute sends what the Kubernetes libraries log through klog to
// the daemon's logrus logger. It is apart from internal/cli because klog
// pulls in cgo (os/user), and migpro-hook, which uses internal/cli, must
// stay a static binary (cmd/migpro-hook TestBinaryIsStatic).
package klogroute
