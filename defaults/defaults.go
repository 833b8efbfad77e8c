package defaults

import (
	"fmt"
	"strings"
)

const (
	// Domain is the resource domain, NVIDIA's, so existing pod specs asking
	// for nvidia.com/mig-<profile> work unchanged.
	Domain = "nvidia.com"
	// CDIKind is the vendor/class of every CDI device migpro writes; a
	// device's qualified name is CDIKind + "=" + its MIG UUID.
	CDIKind = "migpro.dev/mig"
	// AnnotationPrefix starts every annotation and label migpro sets.
	AnnotationPrefix = "migpro.dev/"

	// AgentSocket is the agent's local API socket.
	AgentSocket = "/run/migpro/agent.sock"
	// EnvSocket overrides AgentSocket for migctl and the hook.
	EnvSocket = "MIGPRO_SOCKET"

	// PluginDir is the kubelet's device-plugin directory. The kubelet uses
	// this path whatever its --root-dir says.
	PluginDir = "/var/lib/kubelet/device-plugins"
	// KubeletSocketName is the kubelet's registration socket in PluginDir.
	KubeletSocketName = "kubelet.sock"
	// PodResourcesSocket is the kubelet's PodResources API socket.
	PodResourcesSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"
)

// ProfileLabel is a profile as it appears in resource and socket names:
// "+" is not allowed there, so "1g.10gb+me" becomes "1g.10gb.me".
func ProfileLabel(profile string) string { return strings.ReplaceAll(profile, "+", ".") }

// ResourceName is the extended resource a profile is advertised as, e.g.
// ResourceName("nvidia.com", "1g.10gb+me") = "nvidia.com/mig-1g.10gb.me".
func ResourceName(domain, profile string) string {
	return fmt.Sprintf("%s/%s", domain, ResourcePrefix+ProfileLabel(profile))
}

// ResourcePrefix starts the name (after "<domain>/") of every MIG resource.
const ResourcePrefix = "mig-"

// IsMIGResource reports whether name is one of domain's MIG resources.
func IsMIGResource(domain, name string) bool {
	p := domain + "/" + ResourcePrefix
	return strings.HasPrefix(name, p) && len(name) > len(p)
}
