package telemetry

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
)

// Registration is what the hook tells the agent about a starting container.
type Registration struct {
	ID            string   `json:"id"`
	PID           int      `json:"pid"`
	MIGUUIDs      []string `json:"migUUIDs"`
	PodNamespace  string   `json:"podNamespace,omitempty"`
	PodName       string   `json:"podName,omitempty"`
	PodUID        string   `json:"podUID,omitempty"`
	ContainerName string   `json:"containerName,omitempty"`
}

var (
	// The id names a directory, so it must be one harmless path element.
	idRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
	// MIG-<uuid>, or the older MIG-GPU-<uuid>/<gi>/<ci> form.
	migRE = regexp.MustCompile(`^MIG-[A-Za-z0-9-]{1,80}(/[0-9]{1,3}/[0-9]{1,3})?$`)
	// Kubernetes names, uids and container names are all within this.
	kubeRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9_.-]{0,252})?$`)
)

// MaxMIGUUIDs bounds how many instances one container may claim.
const MaxMIGUUIDs = 16

// Validate checks every field; a registration that fails changes nothing.
func (r Registration) Validate() error {
	if !idRE.MatchString(r.ID) {
		return fmt.Errorf("%w: container id %q (want 1-64 of [A-Za-z0-9_.-], starting alphanumeric)", ErrInvalid, r.ID)
	}
	if r.PID < 0 {
		return fmt.Errorf("%w: pid %d", ErrInvalid, r.PID)
	}
	if len(r.MIGUUIDs) > MaxMIGUUIDs {
		return fmt.Errorf("%w: %d MIG UUIDs (limit %d)", ErrInvalid, len(r.MIGUUIDs), MaxMIGUUIDs)
	}
	for _, u := range r.MIGUUIDs {
		if !migRE.MatchString(u) {
			return fmt.Errorf("%w: MIG UUID %q", ErrInvalid, u)
		}
	}
	for name, v := range map[string]string{
		"pod namespace": r.PodNamespace, "pod name": r.PodName, "pod uid": r.PodUID, "container name": r.ContainerName,
	} {
		if v != "" && !kubeRE.MatchString(v) {
			return fmt.Errorf("%w: %s %q", ErrInvalid, name, v)
		}
	}
	return nil
}

func (r Registration) clone() Registration {
	r.MIGUUIDs = slices.Clone(r.MIGUUIDs)
	return r
}

// writeRegistration records r atomically (temp file, then rename).
func writeRegistration(dir string, r Registration) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("telemetry: encoding registration %s: %w", r.ID, err)
	}
	tmp, err := os.CreateTemp(dir, ".registration-*")
	if err != nil {
		return fmt.Errorf("telemetry: recording registration %s: %w", r.ID, err)
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), filepath.Join(dir, registrationFile))
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("telemetry: recording registration %s: %w", r.ID, werr)
	}
	return nil
}

func readRegistration(dir string) (Registration, error) {
	var r Registration
	b, err := os.ReadFile(filepath.Join(dir, registrationFile))
	if err != nil {
		return r, fmt.Errorf("reading registration: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("decoding %s: %w", filepath.Join(dir, registrationFile), err)
	}
	return r, r.Validate()
}
