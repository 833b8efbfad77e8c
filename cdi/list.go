package cdi

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"
	"tags.cncf.io/container-device-interface/pkg/parser"
)

// SpecFile is one spec of this writer's kind found on disk.
type SpecFile struct {
	// UUID is the instance's MIG UUID, read from the spec's
	// NVIDIA_VISIBLE_DEVICES.
	UUID string
	// Name is the qualified CDI device name.
	Name string
	// Path is the spec file.
	Path string
	// Driver says the spec carries the driver's common edits (the driver's
	// files are mounted by the spec-level edits, which only the driver
	// fills).
	Driver bool
}

// List returns the specs of this writer's kind in the spec directory, sorted
// by UUID, so the agent can compare them with the instances NVML holds after
// a restart. Files of other kinds are ignored. A file of this kind that cannot
// be read is reported in the error, and the others are still returned.
func (w *Writer) List() ([]SpecFile, error) {
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		return nil, fmt.Errorf("cdi: list specs: %w", err)
	}
	var (
		out  []SpecFile
		errs []error
	)
	prefix := w.filePrefix()
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasPrefix(n, prefix) || filepath.Ext(n) != specExt {
			continue
		}
		f, err := w.readSpecFile(filepath.Join(w.dir, n))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if f != nil {
			out = append(out, *f)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].UUID < out[b].UUID })
	if len(errs) > 0 {
		return out, fmt.Errorf("cdi: list specs: %w", errors.Join(errs...))
	}
	return out, nil
}

// readSpecFile reads one candidate file; it returns nil, nil for a valid spec
// of another kind.
func (w *Writer) readSpecFile(path string) (*SpecFile, error) {
	s, err := cdiapi.ReadSpec(path, 0)
	if err != nil {
		return nil, err
	}
	if s.Kind != w.kind {
		return nil, nil
	}
	if len(s.Devices) != 1 {
		return nil, fmt.Errorf("spec %s has %d devices, want 1", path, len(s.Devices))
	}
	d := s.Devices[0]
	var uuid string
	for _, kv := range d.ContainerEdits.Env {
		if v, ok := strings.CutPrefix(kv, EnvNvidiaVisibleDevices+"="); ok {
			uuid = v
		}
	}
	if uuid == "" {
		return nil, fmt.Errorf("spec %s has no %s", path, EnvNvidiaVisibleDevices)
	}
	return &SpecFile{UUID: uuid, Name: parser.QualifiedName(w.vendor, w.class, d.Name), Path: path,
		Driver: len(s.ContainerEdits.Mounts) > 0}, nil
}
