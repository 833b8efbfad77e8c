// Package geometry is the pure model of one GPU model's MIG layout: the
// shapes instances can take, where they may sit, which sets of them are valid,
// and how many fully configured (maximal) layouts each state can still reach,
// the demand-weighted capacity a state keeps for the shapes a node is asked
// for (Wanting, Wanted.Capacity), which free compute slices placements
// could still use (Usable, Stranded) and how many more instances of a
// profile fit (FreeRoom). It is the project's one
// copy of the MIG geometry: the partitioner, the agent and the replay use it.
//
// It is built from what NVML reports (profiles and placements) and never
// names a GPU model. It imports no NVML code, so the policy built on it can be
// tested and benchmarked as plain logic.
package geometry
