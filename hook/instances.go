package hook

import (
	"slices"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// given is the set of MIG instances the container's CDI specs gave it: the
// "--instance" arguments of this hook and of every other migpro hook the
// runtime runs for the container at this stage (a container with two
// instances runs one hook per spec, and each registration must name both).
// The bundle's hooks are the runtime's (from the specs and hooks.d, never
// from the image). A MIG UUID the container names itself (named: its env,
// its annotations) that no spec gave it is dropped with one log line: the
// container still starts, with telemetry tied only to its own instances.
func (cfg Config) given(id string, b Bundle, named []string) []string {
	set := map[string]bool{}
	for _, u := range cfg.Instances {
		if strings.HasPrefix(u, "MIG-") {
			set[u] = true
		}
	}
	if b.Spec != nil && b.Spec.Hooks != nil {
		for _, h := range slices.Concat(b.Spec.Hooks.CreateRuntime, b.Spec.Hooks.Prestart) { //nolint:staticcheck // Prestart: podman's hooks.d stage
			for _, u := range instanceArgs(h) {
				set[u] = true
			}
		}
	}
	var refused []string
	for _, u := range named {
		if !set[u] {
			refused = append(refused, u)
		}
	}
	if len(refused) > 0 {
		cfg.Logf("migpro-hook: container %q names MIG instances %q that its CDI specs did not give it; ignoring them", id, refused)
	}
	out := make([]string, 0, len(set))
	for u := range set {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

// instanceArgs are the MIG UUIDs a migpro hook's arguments name.
func instanceArgs(h specs.Hook) []string {
	if len(h.Args) == 0 || h.Args[0] != "migpro-hook" {
		return nil
	}
	var out []string
	for i := 1; i+1 < len(h.Args); i++ {
		if h.Args[i] == FlagInstance && strings.HasPrefix(h.Args[i+1], "MIG-") {
			out = append(out, h.Args[i+1])
		}
	}
	return out
}
