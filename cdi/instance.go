package cdi

import (
	"fmt"
	"strings"

	"tags.cncf.io/container-device-interface/pkg/parser"
)

// Instance identifies one MIG instance, as the partitioner knows it.
type Instance struct {
	// UUID is the MIG device UUID, "MIG-<uuid>". A UUID without the "MIG-"
	// prefix is accepted and the prefix added.
	UUID string
	// GPUIndex is the parent GPU's NVML index (used in messages only).
	GPUIndex int
	// GPUMinor is the parent GPU's minor number: /dev/nvidia<GPUMinor>. The
	// driver's capability files live under gpu<GPUMinor>/ as well.
	GPUMinor int
	// GIID and CIID are the GPU-instance and compute-instance ids.
	GIID int
	CIID int
	// Profile is the MIG profile name, e.g. "1g.10gb" (informational).
	Profile string
}

func (i Instance) String() string {
	return fmt.Sprintf("%s (gpu %d gi %d ci %d)", i.UUID, i.GPUIndex, i.GIID, i.CIID)
}

// migUUID returns the UUID with its "MIG-" prefix.
func migUUID(uuid string) string {
	if strings.HasPrefix(uuid, "MIG-") {
		return uuid
	}
	return "MIG-" + uuid
}

// DeviceName is the CDI device name of the instance with this MIG UUID: the
// UUID with the "MIG-" prefix, with every character CDI does not allow in a
// device name (for example the '/' of legacy "MIG-GPU-<uuid>/<gi>/<ci>" UUIDs)
// turned into '_'. It fails for an empty UUID.
func DeviceName(uuid string) (string, error) {
	if strings.TrimSpace(uuid) == "" {
		return "", fmt.Errorf("empty MIG UUID")
	}
	b := []byte(migUUID(uuid))
	for i, c := range b {
		if !parser.IsAlphaNumeric(rune(c)) && c != '_' && c != '-' && c != '.' && c != ':' {
			b[i] = '_'
		}
	}
	name := string(b)
	if err := parser.ValidateDeviceName(name); err != nil {
		return "", fmt.Errorf("MIG UUID %q gives no valid CDI device name: %w", uuid, err)
	}
	return name, nil
}

func (i Instance) validate() error {
	switch {
	case strings.TrimSpace(i.UUID) == "":
		return fmt.Errorf("instance on gpu %d gi %d ci %d has an empty MIG UUID", i.GPUIndex, i.GIID, i.CIID)
	case i.GPUMinor < 0:
		return fmt.Errorf("instance %s: negative GPU minor %d", i.UUID, i.GPUMinor)
	case i.GIID < 0 || i.CIID < 0:
		return fmt.Errorf("instance %s: GPU instance %d / compute instance %d is not complete", i.UUID, i.GIID, i.CIID)
	}
	_, err := DeviceName(i.UUID)
	return err
}
