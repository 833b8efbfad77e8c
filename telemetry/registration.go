package telemetry

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

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
