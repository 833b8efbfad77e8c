// Package gpunode opens the GPU node a migpro agent runs on: the real driver
// through NVML, or simulated GPUs with their simulated driver's user space
// laid out under the simulated root. It is the one place a node daemon links
// the simulated GPU; package agent takes the node it is given (agent.GPU)
// and does no I/O until Run.
package gpunode
