package cdispec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/sirupsen/logrus"
	specs "tags.cncf.io/container-device-interface/specs-go"

	"github.com/migpro/migpro/cdi"
	"github.com/migpro/migpro/doctor"
	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/gpu/nvmlgpu"
)

// Options says which driver the spec is made from.
type Options struct {
	// NVML is the library (nil: the system's libnvidia-ml.so.1).
	NVML nvml.Interface
	// DriverRoot is where the driver is installed (default /); DevRoot
	// holds dev/ (default: the driver root).
	DriverRoot, DevRoot string
	// Paths locate the device nodes and capability files of the instances
	// (default: the real driver's).
	Paths *gpu.DriverPaths
	// HookPath is nvidia-cdi-hook's host path (default /usr/bin/nvidia-cdi-hook).
	HookPath string
	// DeviceEdits lets nvcdi make the instances' device edits, as the agent
	// does on a real driver.
	DeviceEdits bool
	// Log is required: Make refuses to run without one (muted callers pass
	// internal/quietlog).
	Log logrus.FieldLogger
}

// GPUInfo is one GPU as the adapter sees it; Errors hold what it could not read.
type GPUInfo struct {
	Index       int            `json:"index"`
	Model       string         `json:"model"`
	UUID        string         `json:"uuid"`
	Minor       int            `json:"minor"`
	Memory      gpu.MemoryInfo `json:"memory"`
	MIG         bool           `json:"mig"`
	Profiles    []string       `json:"profiles,omitempty"`
	InstanceIDs []string       `json:"instances,omitempty"`
	Errors      []string       `json:"errors,omitempty"`
}

func gpuInfo(dev gpu.Device) GPUInfo {
	g := GPUInfo{Index: dev.Index(), Model: dev.Model(), UUID: dev.UUID(), Minor: dev.Minor()}
	var err error
	if g.Memory, err = dev.Memory(); err != nil {
		g.Errors = append(g.Errors, err.Error())
	}
	if g.MIG, err = dev.MIGEnabled(); err != nil {
		g.Errors = append(g.Errors, err.Error())
	}
	if !g.MIG {
		return g
	}
	if ps, err := dev.Profiles(); err != nil {
		g.Errors = append(g.Errors, err.Error())
	} else {
		for _, p := range ps {
			g.Profiles = append(g.Profiles, fmt.Sprintf("%s (id %d, %d MiB, up to %d)", p.Name, p.ID, p.MemoryMiB, p.MaxCount))
		}
	}
	return g
}

// InstanceSpec is the spec the agent would write for one MIG instance.
type InstanceSpec struct {
	UUID string      `json:"uuid"`
	GPU  int         `json:"gpu"`
	Spec *specs.Spec `json:"spec"`
}

// Report is what the agent's CDI code makes on this node.
type Report struct {
	DriverRoot    string `json:"driverRoot"`
	DriverVersion string `json:"driverVersion"`
	// Libraries, Binaries, Firmware and OtherMounts are the host paths of
	// the common edits' mounts, by kind.
	Libraries   []string `json:"libraries"`
	Binaries    []string `json:"binaries"`
	Firmware    []string `json:"firmware"`
	OtherMounts []string `json:"otherMounts"`
	DeviceNodes []string `json:"deviceNodes"`
	// Hooks are "path subcommand" of each hook.
	Hooks       []string             `json:"hooks"`
	CommonEdits specs.ContainerEdits `json:"commonEdits"`
	Instances   []InstanceSpec       `json:"instances"`
	// GPUs is what migpro's NVML adapter (gpu/nvmlgpu) reads of each GPU,
	// through the same read-only calls the agent makes.
	GPUs []GPUInfo `json:"gpus"`
	// Notes say what could not be made, and why.
	Notes []string `json:"notes,omitempty"`
}

// Make makes the driver's common edits with nvcdi, as the agent does at
// start, and the full spec of each MIG instance present, written to a
// temporary directory and read back (never to a CDI directory). An error
// means nothing could be made; partial results carry Notes.
func Make(o Options) (Report, error) {
	if o.DriverRoot == "" {
		o.DriverRoot = cdi.DefaultDriverRoot
	}
	if o.Log == nil {
		return Report{}, errors.New("cdi spec: no logger (Options.Log)")
	}
	lib := o.NVML
	if lib == nil {
		lib = nvml.New()
	}
	// One Init for the whole report, so that a missing library stops here
	// before anything else is called into it.
	if ret := lib.Init(); ret != nvml.SUCCESS {
		if ret == nvml.ERROR_LIBRARY_NOT_FOUND {
			return Report{}, fmt.Errorf("CDI spec: libnvidia-ml.so.1 not found: %s", doctor.DriverFix)
		}
		return Report{}, fmt.Errorf("CDI spec: NVML did not initialise: %s", nvmlgpu.CodeName(ret))
	}
	defer lib.Shutdown()
	r := Report{DriverRoot: o.DriverRoot}
	d, err := cdi.NewNVIDIADriver(lib, cdi.WithDriverRoot(o.DriverRoot), cdi.WithDevRoot(o.DevRoot),
		cdi.WithHookPath(o.HookPath), cdi.WithDeviceEdits(o.DeviceEdits), cdi.WithDriverLogger(o.Log))
	if err != nil {
		return r, fmt.Errorf("CDI spec: %w", err)
	}
	r.DriverVersion = d.Version()
	if r.CommonEdits, err = d.CommonEdits(); err != nil {
		return r, fmt.Errorf("CDI spec: driver %s under %s: %w", r.DriverVersion, o.DriverRoot, err)
	}
	r.classify()
	r.instances(lib, d, o)
	return r, nil
}

func (r *Report) classify() {
	for _, m := range r.CommonEdits.Mounts {
		base := filepath.Base(m.HostPath)
		switch {
		case strings.Contains(base, ".so"):
			r.Libraries = append(r.Libraries, m.HostPath)
		case strings.Contains(m.HostPath, "/firmware/"):
			r.Firmware = append(r.Firmware, m.HostPath)
		case strings.Contains(m.HostPath, "/bin/"):
			r.Binaries = append(r.Binaries, m.HostPath)
		default:
			r.OtherMounts = append(r.OtherMounts, m.HostPath)
		}
	}
	for _, n := range r.CommonEdits.DeviceNodes {
		p := n.HostPath
		if p == "" {
			p = n.Path
		}
		r.DeviceNodes = append(r.DeviceNodes, p)
	}
	for _, h := range r.CommonEdits.Hooks {
		s := h.Path
		if len(h.Args) > 1 {
			s += " " + h.Args[1]
		}
		r.Hooks = append(r.Hooks, s)
	}
	for _, l := range [][]string{r.Libraries, r.Binaries, r.Firmware, r.OtherMounts, r.DeviceNodes} {
		sort.Strings(l)
	}
}

// instances adds the spec of every MIG instance on a GPU in MIG mode.
func (r *Report) instances(lib nvml.Interface, d cdi.Driver, o Options) {
	opts := []nvmlgpu.Option{nvmlgpu.WithLogger(o.Log)}
	if o.Paths != nil {
		opts = append(opts, nvmlgpu.WithPaths(*o.Paths))
	}
	node, err := nvmlgpu.New(lib, opts...)
	if err != nil {
		r.Notes = append(r.Notes, "no instance specs: "+err.Error())
		return
	}
	defer node.Close()
	dir, err := os.MkdirTemp("", "migctl-cdi-spec-")
	if err != nil {
		r.Notes = append(r.Notes, "no instance specs: "+err.Error())
		return
	}
	defer os.RemoveAll(dir)
	w, err := cdi.NewWriter(cdi.WithSpecDir(dir), cdi.WithDriver(d), cdi.WithLogger(o.Log))
	if err != nil {
		r.Notes = append(r.Notes, "no instance specs: "+err.Error())
		return
	}
	for _, dev := range node.Devices() {
		r.GPUs = append(r.GPUs, gpuInfo(dev))
		if on, err := dev.MIGEnabled(); err != nil || !on {
			r.Notes = append(r.Notes, fmt.Sprintf("GPU %d: MIG mode off, no instances (nothing is changed)", dev.Index()))
			continue
		}
		insts, err := dev.Instances()
		if err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("GPU %d: %v", dev.Index(), err))
			continue
		}
		if len(insts) == 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("GPU %d: MIG mode on, no instances", dev.Index()))
		}
		for _, in := range insts {
			g := &r.GPUs[len(r.GPUs)-1]
			g.InstanceIDs = append(g.InstanceIDs, fmt.Sprintf("gi %d ci %d %s", in.GIID, in.CIID, in.UUID))
			if !in.Complete() {
				continue
			}
			r.instanceSpec(w, dev, in, node.Paths())
		}
	}
}

func (r *Report) instanceSpec(w *cdi.Writer, dev gpu.Device, in gpu.Instance, paths gpu.DriverPaths) {
	ci := cdi.Instance{UUID: in.UUID, GPUIndex: dev.Index(), GPUMinor: dev.Minor(), GIID: in.GIID, CIID: in.CIID}
	if _, err := w.Write(ci, paths); err != nil {
		r.Notes = append(r.Notes, err.Error())
		return
	}
	p, err := w.SpecPath(in.UUID)
	if err == nil {
		var b []byte
		if b, err = os.ReadFile(p); err == nil {
			var s specs.Spec
			if err = json.Unmarshal(b, &s); err == nil {
				r.Instances = append(r.Instances, InstanceSpec{UUID: in.UUID, GPU: dev.Index(), Spec: &s})
				return
			}
		}
	}
	r.Notes = append(r.Notes, fmt.Sprintf("instance %s: %v", in.UUID, err))
}

// WriteText summarises the report: counts and paths, one per line.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "driver %s under %s\n", r.DriverVersion, r.DriverRoot)
	for _, g := range []struct {
		name  string
		items []string
	}{{"libraries", r.Libraries}, {"binaries", r.Binaries}, {"firmware", r.Firmware}, {"other mounts", r.OtherMounts},
		{"device nodes", r.DeviceNodes}, {"hooks", r.Hooks}} {
		fmt.Fprintf(&b, "%s (%d):\n", g.name, len(g.items))
		for _, it := range g.items {
			fmt.Fprintf(&b, "  %s\n", it)
		}
	}
	for _, g := range r.GPUs {
		fmt.Fprintf(&b, "gpu %d: %s %s minor %d, %d of %d MiB used, MIG %v, %d profile(s), %d instance(s)\n", g.Index, g.Model, g.UUID, g.Minor,
			g.Memory.Used>>20, g.Memory.Total>>20, g.MIG, len(g.Profiles), len(g.InstanceIDs))
		for _, e := range g.Errors {
			fmt.Fprintf(&b, "  error: %s\n", e)
		}
	}
	fmt.Fprintf(&b, "instance specs (%d):\n", len(r.Instances))
	for _, in := range r.Instances {
		fmt.Fprintf(&b, "  %s (gpu %d): cdiVersion %s, %d device node(s)\n", in.UUID, in.GPU, in.Spec.Version, len(in.Spec.Devices[0].ContainerEdits.DeviceNodes))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
