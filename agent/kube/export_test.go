package kube

import "time"

// SetReachEvery shortens the API server probe period for a test.
func SetReachEvery(d time.Duration) (restore func()) {
	old := reachEvery
	reachEvery = d
	return func() { reachEvery = old }
}
