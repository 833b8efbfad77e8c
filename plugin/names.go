package plugin

import (
	"fmt"
	"strings"

	"k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

const (
	// DefaultPluginDir is the kubelet's device-plugin directory. The kubelet
	// uses this path whatever its --root-dir says.
	DefaultPluginDir = v1beta1.DevicePluginPath
	// DefaultDomain is the resource domain, NVIDIA's, so existing pod specs
	// asking for nvidia.com/mig-<profile> work unchanged.
	DefaultDomain = "nvidia.com"
	// KubeletSocketName is the kubelet's registration socket in the plugin dir.
	KubeletSocketName = "kubelet.sock"
	// socketPrefix starts the name of every socket migpro serves.
	socketPrefix = "migpro-"
)

// profileLabel is the profile as it appears in resource and socket names.
func profileLabel(profile string) string { return strings.ReplaceAll(profile, "+", ".") }

// ResourceName is the extended resource a profile is advertised as, e.g.
// ResourceName("nvidia.com", "1g.10gb+me") = "nvidia.com/mig-1g.10gb.me".
func ResourceName(domain, profile string) string {
	return fmt.Sprintf("%s/mig-%s", domain, profileLabel(profile))
}

// SocketName is the file name of a profile's plugin socket in the plugin dir.
func SocketName(profile string) string { return socketPrefix + profileLabel(profile) + ".sock" }

// validProfile rejects names that cannot become a resource or socket name.
func validProfile(p string) error {
	if p == "" {
		return fmt.Errorf("empty profile name")
	}
	for _, c := range p {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '+' || c == '-' || c == '_'
		if !ok {
			return fmt.Errorf("profile %q: character %q not allowed in a resource name", p, c)
		}
	}
	return nil
}

// validDomain accepts a lowercase DNS name such as "nvidia.com".
func validDomain(d string) bool {
	if d == "" || len(d) > 253 || d[0] == '.' || d[0] == '-' || d[len(d)-1] == '.' || d[len(d)-1] == '-' {
		return false
	}
	for _, c := range d {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
