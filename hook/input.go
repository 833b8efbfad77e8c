package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/migpro/migpro/telemetry/telemetryapi"
)

// Bounds on what the hook reads: the runtime's state and the bundle's config
// are small; anything larger is refused rather than buffered.
const (
	MaxStateBytes  = 1 << 20
	MaxConfigBytes = 16 << 20
)

// Annotations and environment the hook reads.
const (
	// AnnotationMIGUUIDs lists MIG UUIDs (comma-separated) for runtimes that
	// pass devices by annotation rather than env.
	AnnotationMIGUUIDs = "migpro.dev/mig-uuids"
	// The CRI annotations containerd and cri-o set on every container.
	AnnotationPodNamespace  = "io.kubernetes.cri.sandbox-namespace"
	AnnotationPodName       = "io.kubernetes.cri.sandbox-name"
	AnnotationPodUID        = "io.kubernetes.cri.sandbox-uid"
	AnnotationContainerName = "io.kubernetes.cri.container-name"
)

// ErrBadInput marks a malformed state or bundle: the hook's input is broken,
// not the agent.
var ErrBadInput = errors.New("bad hook input")

// ParseState reads the runtime's state JSON.
func ParseState(r io.Reader) (specs.State, error) {
	var st specs.State
	b, err := readBounded(r, "state on stdin", MaxStateBytes)
	if err != nil {
		return st, err
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return st, fmt.Errorf("%w: empty state on stdin (is this running as an OCI hook?)", ErrBadInput)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("%w: decoding state JSON from stdin: %w", ErrBadInput, err)
	}
	if err := ValidID(st.ID); err != nil {
		return st, err
	}
	switch {
	case st.Bundle == "" || !filepath.IsAbs(st.Bundle):
		return st, fmt.Errorf("%w: state bundle %q is not an absolute path", ErrBadInput, st.Bundle)
	case st.Pid < 0:
		return st, fmt.Errorf("%w: state pid %d", ErrBadInput, st.Pid)
	}
	return st, nil
}

// maxIDLen bounds a container id; runtimes use 64 hex digits.
const maxIDLen = 1024

// ValidID checks a container id against the OCI runtimes' id grammar (runc
// and crun accept letters, digits, '_', '+', '-' and '.'), so an id can never
// carry a CR/LF into the agent request, a '/' into a path, or a control
// character into a log line.
func ValidID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: state has no container id", ErrBadInput)
	}
	if len(id) > maxIDLen {
		return fmt.Errorf("%w: container id of %d bytes, at most %d", ErrBadInput, len(id), maxIDLen)
	}
	if id == "." || id == ".." {
		return fmt.Errorf("%w: container id %q", ErrBadInput, id)
	}
	for _, c := range []byte(id) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '+' || c == '-' || c == '.'
		if !ok {
			return fmt.Errorf("%w: container id %q has a character outside [A-Za-z0-9_+.-]", ErrBadInput, id)
		}
	}
	return nil
}

// readBounded reads r whole, refusing more than limit bytes: the hook's
// inputs are small, and anything larger is refused rather than buffered.
func readBounded(r io.Reader, what string, limit int) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("%w: reading %q: %w", ErrBadInput, what, err)
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%w: %q exceeds %d bytes", ErrBadInput, what, limit)
	}
	return b, nil
}

// Bundle is what the hook needs from config.json.
type Bundle struct {
	Spec *specs.Spec
	// Rootfs is the absolute host path of the container's root.
	Rootfs string
}

// LoadBundle reads <bundle>/config.json. The bundle is written by the
// runtime, but config.json carries image-derived values, so it is parsed
// with bounds and checked.
func LoadBundle(bundle string) (Bundle, error) {
	var b Bundle
	path := filepath.Join(bundle, "config.json")
	f, err := os.Open(path)
	if err != nil {
		return b, fmt.Errorf("%w: opening bundle config: %w", ErrBadInput, err)
	}
	defer f.Close()
	data, err := readBounded(f, path, MaxConfigBytes)
	if err != nil {
		return b, err
	}
	var spec specs.Spec
	if err := json.Unmarshal(data, &spec); err != nil {
		return b, fmt.Errorf("%w: decoding %q: %w", ErrBadInput, path, err)
	}
	if spec.Root == nil || spec.Root.Path == "" {
		return b, fmt.Errorf("%w: %q has no root.path", ErrBadInput, path)
	}
	b.Spec = &spec
	b.Rootfs = spec.Root.Path
	if !filepath.IsAbs(b.Rootfs) {
		b.Rootfs = filepath.Join(bundle, b.Rootfs)
	}
	return b, nil
}

// Identify builds the registration for the agent. MIG UUIDs come from the
// process env (NVIDIA_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES) and the
// migpro.dev/mig-uuids annotation; entries that are not MIG UUIDs (GPU
// indexes, "all", "none") are ignored. An empty MIGUUIDs means the container
// is not on a MIG instance and the hook has nothing to do.
func Identify(st specs.State, b Bundle) telemetryapi.Registration {
	ann := map[string]string{}
	if b.Spec != nil {
		for k, v := range b.Spec.Annotations {
			ann[k] = v
		}
	}
	for k, v := range st.Annotations { // the runtime's view wins
		ann[k] = v
	}
	uuids := map[string]bool{}
	add := func(list string) {
		for _, u := range strings.Split(list, ",") {
			if u = strings.TrimSpace(u); strings.HasPrefix(u, "MIG-") {
				uuids[u] = true
			}
		}
	}
	if b.Spec != nil && b.Spec.Process != nil {
		for _, kv := range b.Spec.Process.Env {
			k, v, _ := strings.Cut(kv, "=")
			if k == "NVIDIA_VISIBLE_DEVICES" || k == "CUDA_VISIBLE_DEVICES" {
				add(v)
			}
		}
	}
	add(ann[AnnotationMIGUUIDs])
	r := telemetryapi.Registration{
		ID: st.ID, PID: st.Pid,
		PodNamespace: ann[AnnotationPodNamespace], PodName: ann[AnnotationPodName],
		PodUID: ann[AnnotationPodUID], ContainerName: ann[AnnotationContainerName],
	}
	for u := range uuids {
		r.MIGUUIDs = append(r.MIGUUIDs, u)
	}
	sort.Strings(r.MIGUUIDs)
	return r
}
