// Package plugin serves kubelet device plugins, one per advertised MIG profile,
// and runs the provisioning loop that turns demand into instances.
package plugin
