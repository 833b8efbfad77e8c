package main

import (
	"context"
	"fmt"

	"github.com/migpro/migpro/agent"
)

// newPodResources adapts the kubelet's PodResources client to the agent.
func newPodResources(socket string) agent.Assignments { return unavailablePods{socket} }

type unavailablePods struct{ socket string }

func (u unavailablePods) AssignedDevices(context.Context) (map[string]agent.PodRef, error) {
	return nil, fmt.Errorf("PodResources client not wired yet (%s)", u.socket)
}
