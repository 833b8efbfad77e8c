package cdi

import (
	"fmt"
	"strings"

	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"
	specs "tags.cncf.io/container-device-interface/specs-go"
)

// Driver supplies the NVIDIA driver's part of every spec: what a container
// needs from the host's driver installation to run a CUDA program, besides
// the instance's own device nodes. [NVIDIADriver] is the implementation,
// built on NVIDIA's nvcdi; tests use fakes.
type Driver interface {
	// CommonEdits are the edits every instance's container needs: the
	// control device nodes (nvidiactl, nvidia-uvm, nvidia-uvm-tools), the
	// driver's libraries, binaries, firmware and IPC sockets, and the hooks
	// that make the libraries usable (symlinks, ldcache). They are read once,
	// when a Writer is made.
	CommonEdits() (specs.ContainerEdits, error)
	// DeviceEdits are the instance's own device edits (its GPU node and its
	// GPU- and compute-instance capability nodes). ok is false when the
	// driver cannot make them on this host; migpro's own device-node edits
	// are then used, which equal the driver's (see the package doc).
	DeviceEdits(i Instance) (e specs.ContainerEdits, ok bool, err error)
}

// commonEdits checks and cleans the driver's common edits for use in every
// spec: a copy, without NVIDIA_VISIBLE_DEVICES, validated.
func commonEdits(d Driver) (specs.ContainerEdits, error) {
	e, err := d.CommonEdits()
	if err != nil {
		return specs.ContainerEdits{}, fmt.Errorf("driver's common edits: %w", err)
	}
	e = cloneEdits(e)
	env := e.Env[:0]
	for _, kv := range e.Env {
		if !strings.HasPrefix(kv, EnvNvidiaVisibleDevices+"=") {
			env = append(env, kv)
		}
	}
	e.Env = env
	if err := (&cdiapi.ContainerEdits{ContainerEdits: &e}).Validate(); err != nil {
		return specs.ContainerEdits{}, fmt.Errorf("driver's common edits are invalid: %w", err)
	}
	return e, nil
}
