package plugin

import (
	"fmt"

	"github.com/migpro/migpro/defaults"
)

// SocketPrefix starts the name of every socket migpro serves.
const SocketPrefix = socketPrefix

const (
	socketPrefix = "migpro-"
)

// SocketName is the file name of a profile's plugin socket in the plugin dir.
func SocketName(profile string) string {
	return socketPrefix + defaults.ProfileLabel(profile) + ".sock"
}

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
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '.' {
			return false
		}
	}
	return true
}
