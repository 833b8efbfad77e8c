// Package replay is a discrete-event simulator that replays MIG workloads
// under several placement policies and reports, side by side, what each one
// costs: makespan, throughput, job completion times, memory utilisation,
// reconfigurations and work lost to OOM restarts, against a lower bound.
//
// It lives at the top level, not under partitioner/, because it is a client
// of several components (the partitioner, its simulated GPU, the estimator
// and the predictor) rather than part of the MIG geometry model: partitioner
// stays "where instances go", and this package is "what that is worth".
//
// Every dynamic policy runs the real code. A cluster is a set of nodes, each
// a simgpu.Node (the enforcing simulated driver) with its own
// partitioner.Partitioner, exactly as one agent per node would run. A
// cluster-level choice picks the node; the node's partitioner picks the GPU,
// the placement, and whether to reuse, create or destroy. Policy 5 sizes jobs
// with the estimator (declared memory, then learned history) and feeds each
// run's memory series to the predictor, which marks a run before it runs out
// of memory and names the profile to restart it on. Policy migpro+plan
// orders the wait queue with a planner that simulates the node forward from
// what it knows now (lookahead.go), and each scan starts first the waiting jobs
// whose placement strands no compute slice the waiting requests could use
// (pack.go); a job that asks only for memory starts on the profile with the
// same memory and more compute slices when those slices would idle
// (widen.go). Once arrivals stop, it serves what waits shortest expected run
// first (batch.go). It sizes jobs from the workload history (what runs that
// ran out of memory, were moved, or outgrew their declaration showed), and
// the predictor watches only the runs sized from a declared memory
// (predict.go, Strategy.Learn).
//
// Time is simulated: nothing sleeps. NVML creates and destroys cost
// 0.1–0.4 s of simulated time by instance size (NVMLCost) and are
// serialised per GPU. A run's progress advances at a rate set by its
// instance's compute slices and, for PCIe-heavy jobs, by the PCIe share of its
// GPU; every change of rate reschedules the run's next milestone (finish,
// predicted mark or OOM), so the event count is linear in the number of runs.
//
// Waiting jobs are retried only where something changed: a release retries
// the queue on that node alone, a failed (profile, node) pair is remembered
// for the rest of a scan (capacity only shrinks during a scan), and only new
// arrivals are offered to every node. This keeps a 5,000-job stream on 160
// GPUs in seconds.
//
// Besides the agent's policies (first-fit, reachability, migpro) it models
// what users run instead, as baselines the agent does not offer
// (baselines.go): NVIDIA's DRA driver, HAMi's dynamic MIG and a static
// layout. It reads generated mixes, its own CSV and OpenB pod lists
// (openb.go), and reports the start wait per request size, NVML steps,
// fragmentation waits and each GPU's stranded slices over time (metrics.go,
// plotstrand.go). Issue 28's targets are measured per configuration over
// a seed set (targets.go) and judged target by target, naming the baseline
// that wins each row missed and the seeds' noise (targetsum.go). The
// reservation frontier replays the agent's --reserve-after at every limit
// of a list against the same baselines, with simulator-only trials of
// other rules (frontier.go, frontierout.go, plotfrontier.go). A result
// on more than one node is simulator only whatever its policy, since the
// node is the replay's choice (Result.SimulatorOnly).
//
// docs/replay.md is the entry page (the targets against the baselines);
// docs/replay-workloads.md has the workload mixes, the CSV format and the
// metrics, docs/replay-policies.md the policies, docs/replay-frontier.md
// the reservation frontier.
package replay
