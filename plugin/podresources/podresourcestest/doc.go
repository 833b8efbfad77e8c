// Package podresourcestest has an in-memory podresources.Lister for tests
// of the agent, standing in for the kubelet's PodResources API.
package podresourcestest
