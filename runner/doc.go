// Package runner runs a container on a MIG instance from the local migpro
// agent and, when the agent predicts the container will run out of GPU
// memory, restarts it from scratch on the larger instance the agent
// recommends, before it does. It is what `migpro-lab run` does on containerd.
//
// The logic (Runner) is written against two small interfaces, Agent and
// Engine. AgentClient talks to a real agent over its local API socket;
// Containerd drives a real containerd through its Go client. Tests use fakes.
package runner
