// Package plugintest is the kubelet's side of device plugin registration,
// for tests: Kubelet serves the Registration API on <dir>/kubelet.sock, as
// the kubelet does, and records what registers. It links nothing of package
// plugin, so that package's own tests use it too.
package plugintest
