package replay

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkTargets measures issue 28's targets: per configuration, summed
// over seeds, the agent's policy (migpro) against every baseline. It runs
// on both OpenB pod lists (8× A100 at load 0.9, windows of 600 GPU pods)
// when MIGPRO_OPENB_DIR names their folder, and on generated online
// streams (1-8 GPUs, A100, H100 and a mixed node). TARGET_SEEDS picks the
// seeds: "tune" (1-3, the default), "held" (4-6, kept apart from tuning)
// or a comma-separated list.
// TARGET_MIGPRO names another policy to measure in migpro's place (to try
// a variant against the same baselines).
//
// Per configuration it reports the baselines' summed mean JCT over
// migpro's (jct-X/migpro, above 1: migpro better), NVML steps per job
// (migpro's and nvidia-dra's), fragmentation waits (migpro's and
// first-fit's) and the p95 arrival-to-start of 4g and 7g requests (migpro's
// over the best baseline's, at most 1 meets the target).
func BenchmarkTargets(b *testing.B) {
	seeds := []uint64{1, 2, 3}
	switch list := os.Getenv("TARGET_SEEDS"); list {
	case "", "tune":
	case "held":
		seeds = []uint64{4, 5, 6}
	default: // a comma-separated list, e.g. more tuning seeds
		seeds = nil
		for _, f := range strings.Split(list, ",") {
			n, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
			if err != nil {
				b.Fatalf("TARGET_SEEDS %q: %v", list, err)
			}
			seeds = append(seeds, n)
		}
	}
	type conf struct {
		name, node string
		gpus       int
		jobs       func(m *Model, seed uint64) ([]Job, error)
	}
	var confs []conf
	if dir := os.Getenv("MIGPRO_OPENB_DIR"); dir != "" {
		for _, f := range []string{"openb_pod_list_default.csv", "openb_pod_list_gpushare20.csv"} {
			path := filepath.Join(dir, f)
			confs = append(confs, conf{"openb/" + f, "a100-40gb", 8, func(m *Model, seed uint64) ([]Job, error) {
				fh, err := os.Open(path)
				if err != nil {
					return nil, err
				}
				defer fh.Close()
				jobs, _, err := ReadJobs(fh, m, MixSpec{Jobs: 600, Seed: seed, Load: 0.9, GPUs: 8})
				return jobs, err
			}})
		}
	}
	online := func(gpus int, load float64) func(m *Model, seed uint64) ([]Job, error) {
		return func(m *Model, seed uint64) ([]Job, error) {
			return Generate(MixSpec{Name: "online", Jobs: 600, Seed: seed, Load: load, GPUs: gpus}, m)
		}
	}
	for _, c := range []struct {
		node string
		gpus int
	}{{"a100-40gb", 1}, {"a100-40gb", 2}, {"a100-40gb", 4}, {"a100-40gb", 8}, {"h100-80gb", 4}, {"a100-40gb:2,h100-80gb:1", 3}, {"a100-40gb:4,h100-80gb:4", 8}} {
		for _, load := range []float64{0.8, 0.9} {
			confs = append(confs, conf{fmt.Sprintf("online/%s/%dgpu/load%.1f", c.node, c.gpus, load), c.node, c.gpus, online(c.gpus, load)})
		}
	}
	policies := []string{"migpro", "first-fit", "nvidia-dra", "hami", "static"}
	for _, c := range confs {
		b.Run(c.name, func(b *testing.B) {
			m, err := LoadModel(c.node)
			if err != nil {
				b.Fatal(err)
			}
			gpus := c.gpus
			if m.GPUsPerNode() > 0 {
				gpus = m.GPUsPerNode()
			}
			for i := 0; i < b.N; i++ {
				jct := map[string]float64{}
				steps, runs := map[string]int{}, map[string]int{}
				frag := map[string]int{}
				p95 := map[string]map[string]float64{}
				for _, seed := range seeds {
					jobs, err := c.jobs(m, seed)
					if err != nil {
						b.Fatal(err)
					}
					for _, name := range policies {
						pol := policy(b, name)
						if alt := os.Getenv("TARGET_MIGPRO"); alt != "" && name == "migpro" {
							pol = policy(b, alt)
						}
						r, err := Run(jobs, Config{Model: c.node, Nodes: 1, GPUsPerNode: gpus, Seed: int64(seed)}, pol)
						if err != nil {
							b.Fatalf("%s seed %d: %v", name, seed, err)
						}
						jct[name] += r.MeanJCT
						steps[name] += r.Reconfigs
						runs[name] += len(r.Runs)
						frag[name] += r.Fragmented
						if p95[name] == nil {
							p95[name] = map[string]float64{}
						}
						for _, s := range []string{"4g", "7g"} {
							if w, ok := r.StartWait(s); ok {
								p95[name][s] += w.P95
							}
						}
					}
				}
				for _, name := range policies[1:] {
					b.ReportMetric(jct[name]/jct["migpro"], "jct-"+name+"/migpro")
				}
				b.ReportMetric(float64(steps["migpro"])/float64(runs["migpro"]), "migpro-steps/job")
				b.ReportMetric(float64(steps["nvidia-dra"])/float64(runs["nvidia-dra"]), "dra-steps/job")
				b.ReportMetric(float64(frag["migpro"]), "migpro-frag")
				b.ReportMetric(float64(frag["first-fit"]), "ff-frag")
				for _, s := range []string{"4g", "7g"} {
					best := -1.0
					for _, name := range policies[1:] {
						if v := p95[name][s]; v > 0 && (best < 0 || v < best) {
							best = v
						}
					}
					if best > 0 {
						b.ReportMetric(p95["migpro"][s]/best, "p95-"+s+"/best-baseline")
					}
				}
			}
		})
	}
}
