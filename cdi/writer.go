package cdi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/internal/atomicfile"
	"github.com/sirupsen/logrus"
	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"
	"tags.cncf.io/container-device-interface/pkg/parser"
	specs "tags.cncf.io/container-device-interface/specs-go"
)

// nvidiaKind belongs to NVIDIA's container toolkit; migpro must never write
// (and so overwrite) its specs.
const nvidiaKind = "nvidia.com/gpu"

// specExt is the encoding of migpro's specs.
const specExt = ".json"

// Writer writes and removes the CDI specs of MIG instances. It is safe for
// concurrent use.
type Writer struct {
	dir           string
	kind          string
	vendor, class string
	extra         specs.ContainerEdits
	each          func(Instance) specs.ContainerEdits // nil: none
	driver        Driver
	common        specs.ContainerEdits // the driver's, cleaned; empty without one
	fsync         bool
	log           logrus.FieldLogger

	mu sync.Mutex // serialises changes to the spec files
}

// NewWriter checks the options, creates the spec directory if needed and
// removes temp files a crashed writer of the same kind left behind.
func NewWriter(opts ...Option) (*Writer, error) {
	c := config{dir: DefaultSpecDir, kind: DefaultKind}
	for _, o := range opts {
		o(&c)
	}
	if c.log == nil {
		return nil, errors.New("cdi: no logger (WithLogger)")
	}
	vendor, class := parser.ParseQualifier(c.kind)
	if err := parser.ValidateVendorName(vendor); err != nil {
		return nil, fmt.Errorf("cdi: bad kind %q: %w", c.kind, err)
	}
	if err := parser.ValidateClassName(class); err != nil {
		return nil, fmt.Errorf("cdi: bad kind %q: %w", c.kind, err)
	}
	if c.kind == nvidiaKind {
		return nil, fmt.Errorf("cdi: kind %q belongs to NVIDIA's container toolkit; use another, e.g. %q", c.kind, DefaultKind)
	}
	if c.dir == "" {
		return nil, errors.New("cdi: empty spec directory")
	}
	if err := c.extraValid(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return nil, fmt.Errorf("cdi: create spec directory: %w", err)
	}
	w := &Writer{dir: c.dir, kind: c.kind, vendor: vendor, class: class, extra: c.extra, each: c.each, fsync: c.fsync,
		driver: c.driver, log: c.log.WithField("component", "cdi")}
	if c.driver != nil {
		common, err := commonEdits(c.driver)
		if err != nil {
			return nil, fmt.Errorf("cdi: %w", err)
		}
		w.common = common
	}
	removeStaleTemps(w.dir, w.filePrefix())
	return w, nil
}

func (c config) extraValid() error {
	e := cdiapi.ContainerEdits{ContainerEdits: &c.extra}
	if err := e.Validate(); err != nil {
		return fmt.Errorf("cdi: bad extra edits: %w", err)
	}
	return nil
}

// Kind is the writer's CDI kind, "vendor/class".
func (w *Writer) Kind() string { return w.kind }

// Dir is the spec directory.
func (w *Writer) Dir() string { return w.dir }

// QualifiedName is the name a runtime is given for the instance with this
// MIG UUID, e.g. "migpro.dev/mig=MIG-…". It writes nothing.
func (w *Writer) QualifiedName(uuid string) (string, error) {
	name, err := DeviceName(uuid)
	if err != nil {
		return "", fmt.Errorf("cdi: %w", err)
	}
	return parser.QualifiedName(w.vendor, w.class, name), nil
}

// SpecPath is the file that holds the spec of the instance with this UUID.
func (w *Writer) SpecPath(uuid string) (string, error) {
	name, err := DeviceName(uuid)
	if err != nil {
		return "", fmt.Errorf("cdi: %w", err)
	}
	return filepath.Join(w.dir, w.fileName(name)), nil
}

// filePrefix starts the file name of every spec of this kind.
func (w *Writer) filePrefix() string {
	return cdiapi.GenerateTransientSpecName(w.vendor, w.class, "")
}

func (w *Writer) fileName(device string) string {
	return cdiapi.GenerateTransientSpecName(w.vendor, w.class, device) + specExt
}

// Write writes (or atomically replaces) the spec of instance i, whose device
// nodes and capability files are found through paths, and returns the
// instance's qualified CDI name. On error nothing is written.
func (w *Writer) Write(i Instance, paths gpu.DriverPaths) (string, error) {
	spec, err := w.build(i, paths)
	if err != nil {
		return "", fmt.Errorf("cdi: write spec for %s: %w", i, err)
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return "", fmt.Errorf("cdi: write spec for %s: encode: %w", i, err)
	}
	name := spec.Devices[0].Name
	w.mu.Lock()
	defer w.mu.Unlock()
	opt := atomicfile.Options{Durable: w.fsync, Check: func(tmp string) error {
		// Read the bytes back the way a runtime will, with the library's
		// validation (version, names, edits).
		if _, err := cdiapi.ReadSpec(tmp, 0); err != nil {
			return fmt.Errorf("invalid spec: %w", err)
		}
		return nil
	}}
	if err := atomicfile.WriteFile(filepath.Join(w.dir, w.fileName(name)), data, specFileMode, opt); err != nil {
		return "", fmt.Errorf("cdi: write spec for %s: %w", i, err)
	}
	qn := parser.QualifiedName(w.vendor, w.class, name)
	w.log.WithFields(logrus.Fields{"instance": migUUID(i.UUID), "gpu": i.GPUIndex, "gi": i.GIID,
		"ci": i.CIID, "cdiVersion": spec.Version, "device": qn}).Debug("CDI spec written")
	return qn, nil
}

// build makes the spec of one instance.
func (w *Writer) build(i Instance, paths gpu.DriverPaths) (*specs.Spec, error) {
	if err := i.validate(); err != nil {
		return nil, err
	}
	name, err := DeviceName(i.UUID)
	if err != nil {
		return nil, err
	}
	dev, err := w.deviceEdits(i, paths)
	if err != nil {
		return nil, err
	}
	edits := appendEdits(dev, w.extra)
	if w.each != nil {
		edits = appendEdits(edits, w.each(i))
	}
	spec := &specs.Spec{
		Kind:           w.kind,
		ContainerEdits: cloneEdits(w.common),
		Devices:        []specs.Device{{Name: name, ContainerEdits: edits}},
	}
	// There is no default version: set the lowest one the content needs.
	if spec.Version, err = specs.MinimumRequiredVersion(spec); err != nil {
		return nil, fmt.Errorf("determine cdiVersion: %w", err)
	}
	return spec, nil
}

// deviceEdits are the instance's device edits: the driver's where it makes
// them, migpro's own device nodes otherwise (with the control nodes unless
// the driver's common edits carry them), and the instance's env.
func (w *Writer) deviceEdits(i Instance, paths gpu.DriverPaths) (specs.ContainerEdits, error) {
	if w.driver != nil {
		e, ok, err := w.driver.DeviceEdits(i)
		if err != nil {
			return specs.ContainerEdits{}, err
		}
		if ok {
			return appendEdits(instanceEdits(i, nil), e), nil
		}
	}
	nodes, err := deviceNodes(i, paths, w.driver == nil)
	if err != nil {
		return specs.ContainerEdits{}, err
	}
	return instanceEdits(i, nodes), nil
}

// Remove deletes the spec of the instance with this MIG UUID. Removing a spec
// that does not exist is not an error.
func (w *Writer) Remove(uuid string) error {
	path, err := w.SpecPath(uuid)
	if err != nil {
		return fmt.Errorf("cdi: remove spec: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cdi: remove spec of %s: %w", uuid, err)
	}
	if w.fsync {
		atomicfile.SyncDir(w.dir)
	}
	w.log.WithField("instance", uuid).Debug("CDI spec removed")
	return nil
}
