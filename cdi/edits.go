package cdi

import (
	"fmt"

	specs "tags.cncf.io/container-device-interface/specs-go"
)

// Env variables that select the instance, for the CUDA runtime and for
// NVIDIA's container toolkit.
const (
	EnvNvidiaVisibleDevices = "NVIDIA_VISIBLE_DEVICES"
	EnvCudaVisibleDevices   = "CUDA_VISIBLE_DEVICES"
)

// instanceEdits are the edits migpro itself makes for one instance.
func instanceEdits(i Instance, nodes []*specs.DeviceNode) specs.ContainerEdits {
	u := migUUID(i.UUID)
	return specs.ContainerEdits{
		Env: []string{
			fmt.Sprintf("%s=%s", EnvNvidiaVisibleDevices, u),
			fmt.Sprintf("%s=%s", EnvCudaVisibleDevices, u),
		},
		DeviceNodes: nodes,
	}
}

// appendEdits appends extra's lists to e; e's own entries come first. A
// scalar set in extra (IntelRdt) wins.
func appendEdits(e, extra specs.ContainerEdits) specs.ContainerEdits {
	extra = cloneEdits(extra)
	e.Env = append(e.Env, extra.Env...)
	e.DeviceNodes = append(e.DeviceNodes, extra.DeviceNodes...)
	e.NetDevices = append(e.NetDevices, extra.NetDevices...)
	e.Hooks = append(e.Hooks, extra.Hooks...)
	e.Mounts = append(e.Mounts, extra.Mounts...)
	e.AdditionalGIDs = append(e.AdditionalGIDs, extra.AdditionalGIDs...)
	if extra.IntelRdt != nil {
		e.IntelRdt = extra.IntelRdt
	}
	return e
}

// cloneEdits deep-copies the slices of e, so a caller's later changes never
// reach a Writer.
func cloneEdits(e specs.ContainerEdits) specs.ContainerEdits {
	out := specs.ContainerEdits{
		Env:            append([]string(nil), e.Env...),
		AdditionalGIDs: append([]uint32(nil), e.AdditionalGIDs...),
	}
	for _, n := range e.DeviceNodes {
		c := *n
		out.DeviceNodes = append(out.DeviceNodes, &c)
	}
	for _, n := range e.NetDevices {
		c := *n
		out.NetDevices = append(out.NetDevices, &c)
	}
	for _, h := range e.Hooks {
		c := *h
		c.Args = append([]string(nil), h.Args...)
		c.Env = append([]string(nil), h.Env...)
		out.Hooks = append(out.Hooks, &c)
	}
	for _, m := range e.Mounts {
		c := *m
		c.Options = append([]string(nil), m.Options...)
		out.Mounts = append(out.Mounts, &c)
	}
	if e.IntelRdt != nil {
		c := *e.IntelRdt
		c.Schemata = append([]string(nil), e.IntelRdt.Schemata...)
		out.IntelRdt = &c
	}
	return out
}
