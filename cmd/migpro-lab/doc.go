// Command migpro-lab is migpro's workbench, kept apart from migctl so that
// the node tool stays small: the demo (whose second act runs the real agent
// in-process), the workload replay with its charts (gonum/plot), and
// `migpro-lab run`, which starts containers through containerd's client and
// moves them to a larger MIG instance before they run out of memory. Each
// command is a newXCmd function with its flags bound to an options struct;
// internal/ctl holds the plumbing it shares with migctl.
package main
