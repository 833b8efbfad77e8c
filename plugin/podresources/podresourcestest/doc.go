// Package podresourcestest stands in for the kubelet's PodResources API in
// tests: Fake, an in-memory podresources.Lister, for the agent's tests, and
// ServeKubelet, the API itself over gRPC, for the client's.
package podresourcestest
