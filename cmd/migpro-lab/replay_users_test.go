package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// openbPods writes a pod list in the OpenB format: a CPU-only pod, then
// n single-GPU pods of varied GPU shares, creation times and run times.
func openbPods(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n")
	b.WriteString("cpu-only,2000,4096,0,0,,LS,Running,0,900,0\n")
	shares := []int{100, 250, 500, 1000, 300, 700, 150, 460}
	for i := 0; i < n; i++ {
		created := 60 * i
		fmt.Fprintf(&b, "pod-%02d,4000,8192,1,%d,,LS,Running,%d,%d,%d\n", i, shares[i%len(shares)], created, created+600+97*(i%7), created)
	}
	path := filepath.Join(t.TempDir(), "openb_pod_list_test.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// `migpro-lab replay --csv FILE` reads an OpenB pod list as it is, known by
// its header; --jobs N --seed S picks a window of N GPU pods (the CPU-only
// pod is not one), --load rescales the arrivals, and every baseline and
// the agent's policy replay it.
func TestReplayReadsOpenBPodList(t *testing.T) {
	path := openbPods(t, 40)
	base := []string{"--csv", path, "--simulate", "a100-40gb:2", "--policies", "first-fit,nvidia-dra,hami,static,migpro"}
	text, errs, code := replayCmd(t, append(base, "--jobs", "12", "--seed", "2", "--load", "0.9")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if first := strings.SplitN(text, "\n", 2)[0]; !strings.Contains(first, "OpenB") || !strings.Contains(first, path) {
		t.Errorf("workload line %q does not say it read an OpenB pod list from %s", first, path)
	}
	rows := replayRows(t, append(base, "--jobs", "12", "--seed", "2", "--load", "0.9")...)
	if len(rows) != 5 {
		t.Fatalf("%d rows, want 5", len(rows))
	}
	for _, r := range rows {
		if r.Jobs != 12 {
			t.Errorf("%s: %d jobs, want a window of 12 GPU pods", r.Policy, r.Jobs)
		}
	}
	other := replayRows(t, append(base, "--jobs", "12", "--seed", "3", "--load", "0.9")...)
	light := replayRows(t, append(base, "--jobs", "12", "--seed", "2", "--load", "0.3")...)
	if other[4].Makespan == rows[4].Makespan && other[4].MeanJCT == rows[4].MeanJCT {
		t.Errorf("seeds 2 and 3 replayed the same window: %+v", rows[4])
	}
	// A third of the load spreads the same pods' arrivals three times as
	// wide: the makespan grows, the waits shrink.
	if light[4].Makespan <= rows[4].Makespan || light[4].MeanJCT > rows[4].MeanJCT {
		t.Errorf("load 0.3: makespan %.0f s, mean JCT %.0f s; load 0.9: %.0f s, %.0f s", light[4].Makespan, light[4].MeanJCT, rows[4].Makespan, rows[4].MeanJCT)
	}
	all := replayRows(t, "--csv", path, "--simulate", "a100-40gb:2", "--policies", "migpro")
	if all[0].Jobs != 40 {
		t.Errorf("without --jobs: %d jobs, want every one of the 40 GPU pods", all[0].Jobs)
	}
	bad := strings.Replace(string(must(os.ReadFile(path))), ",250,", ",lots,", 1)
	badPath := filepath.Join(t.TempDir(), "bad.csv")
	if err := os.WriteFile(badPath, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := replayCmd(t, "--csv", badPath); code != 2 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "lots") {
		t.Errorf("a bad gpu_milli: exit %d, stderr %q; want one line naming it, exit 2", code, errs)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// The metrics users feel, per policy, in the table and in JSON: arrival to
// start by request size (mean and p95), NVML steps per job, fragmentation
// waits and each GPU's stranded slices; the baselines are marked simulator
// only, the agent's policies are not on one node.
func TestReplayUserMetricsPerPolicy(t *testing.T) {
	args := []string{"--mix", "online", "--jobs", "150", "--seed", "2", "--load", "0.9", "--simulate", "a100-40gb:2", "--policies", "first-fit,nvidia-dra,hami,migpro"}
	text, errs, code := replayCmd(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"start mean/p95 s", "steps/job", "frag waits", "stranded slices/GPU (worst)", "\nnvidia-dra *", "\nhami *",
		"\nmigpro vs nvidia-dra", "\nmigpro vs hami", "* simulator only"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "\nmigpro *") || strings.Contains(text, "on more than one node") {
		t.Errorf("migpro on one node is marked simulator only:\n%s", text)
	}
	rows := replayRows(t, args...)
	for _, r := range rows {
		if len(r.StartWaits) < 2 || len(r.Stranded) != 2 || r.StepsPerJob <= 0 {
			t.Errorf("%s: start waits %+v, stranded %v, steps/job %v", r.Policy, r.StartWaits, r.Stranded, r.StepsPerJob)
		}
		jobs := 0
		for _, w := range r.StartWaits {
			jobs += w.Jobs
			if w.P95 < w.Mean || w.Mean < 0 {
				t.Errorf("%s %s: mean %v, p95 %v", r.Policy, w.Size, w.Mean, w.P95)
			}
		}
		if jobs != r.Jobs {
			t.Errorf("%s: start waits count %d jobs of %d", r.Policy, jobs, r.Jobs)
		}
		if want := r.Policy == "nvidia-dra" || r.Policy == "hami"; r.SimulatorOnly != want {
			t.Errorf("%s: simulatorOnly %v", r.Policy, r.SimulatorOnly)
		}
		if (r.Policy == "nvidia-dra" || r.Policy == "hami") && r.StepsPerJob != 2 {
			t.Errorf("%s: %v NVML steps per job, want a create and a destroy per run", r.Policy, r.StepsPerJob)
		}
	}
}

// Every policy replays on several nodes, of one model and mixed (issue 28:
// migpro+plan failed on every multi-node replay), with the invariants
// checked; on more than one node every policy is marked simulator only,
// since the replay, not the agent, picks the node.
func TestReplayEveryPolicyOnSeveralNodes(t *testing.T) {
	for _, node := range []string{"a100-40gb:2", "a100-40gb:1,h100-80gb:1"} {
		out, errs, code := replayCmd(t, "--mix", "stream", "--jobs", "120", "--nodes", "2", "--simulate", node, "--policies", "all", "--check")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", node, code, errs)
		}
		table := out[:strings.Index(out, "\nlower bound")]
		for _, name := range []string{"sequential", "static", "first-fit", "nvidia-dra", "hami", "reachability", "migpro", "migpro+plan", "migpro+reserve-after"} {
			if !strings.Contains(table, "\n"+name+" *") {
				t.Errorf("%s: no row %q marked simulator only:\n%s", node, name, table)
			}
		}
		if !strings.Contains(out, "on more than one node every policy is, the agent's too") {
			t.Errorf("%s: no note on the node choice:\n%s", node, out)
		}
	}
	rows := replayRows(t, "--mix", "stream", "--jobs", "60", "--nodes", "2", "--simulate", "a100-40gb:2", "--policies", "migpro")
	if !rows[0].SimulatorOnly || len(rows[0].Stranded) != 4 {
		t.Errorf("migpro on 2 nodes: simulatorOnly %v, %d GPUs' stranded slices", rows[0].SimulatorOnly, len(rows[0].Stranded))
	}
}
