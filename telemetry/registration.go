package telemetry

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/migpro/migpro/internal/atomicfile"
	"github.com/migpro/migpro/telemetry/telemetryapi"
)

// API types, shared with the hook and migctl through telemetryapi.
type (
	Registration = telemetryapi.Registration
	Endpoint     = telemetryapi.Endpoint
	Source       = telemetryapi.Source
	TopEntry     = telemetryapi.TopEntry
	Top          = telemetryapi.Top
)

// Sources.
const (
	SourceShim = telemetryapi.SourceShim
	SourceNVML = telemetryapi.SourceNVML
)

// ErrInvalid marks a bad registration.
var ErrInvalid = telemetryapi.ErrInvalid

// writeRegistration records r atomically (temp file, then rename).
func writeRegistration(dir string, r Registration) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("telemetry: encoding registration %s: %w", r.ID, err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, registrationFile), b, 0o600, atomicfile.Options{}); err != nil {
		return fmt.Errorf("telemetry: recording registration %s: %w", r.ID, err)
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

// pidCheckFile records, next to the registration, that the agent could see
// the container's pid when it registered, and from which pid namespace. A
// restarted agent may treat a vanished pid as an exited container only when
// this record exists and names its own pid namespace: an agent without the
// host's pid namespace (no hostPID) cannot see any container's pid, and must
// not read "not visible" as "gone".
const pidCheckFile = "pidcheck"

// pidNamespaceOf names pid's pid namespace as the agent sees it, or "" when
// it cannot.
func pidNamespaceOf(pid int) string {
	ns, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/pid")
	return ns
}

// ownPIDNamespace names the agent's pid namespace ("pid:[4026531836]").
func ownPIDNamespace() string {
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return ns
}

func writePIDCheck(dir string, visible bool, ns string) error {
	path := filepath.Join(dir, pidCheckFile)
	if !visible || ns == "" {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("telemetry: clearing %s: %w", path, err)
		}
		return nil
	}
	if err := atomicfile.WriteFile(path, []byte(ns), 0o600, atomicfile.Options{}); err != nil {
		return fmt.Errorf("telemetry: recording %s: %w", path, err)
	}
	return nil
}

// pidCheckedIn returns the pid namespace recorded by writePIDCheck, or "".
func pidCheckedIn(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, pidCheckFile))
	if err != nil {
		return ""
	}
	return string(b)
}
