package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/migpro/migpro/client"
)

// BenchmarkAgentRSS measures the agent's resident memory with 8 simulated
// GPUs fully partitioned (56 1g.5gb instances, each with its CDI spec), in
// the real binary (target: under 64 MiB). ns/op is the fill time and means
// little; read rss-MiB.
func BenchmarkAgentRSS(b *testing.B) {
	dir := b.TempDir()
	bin := filepath.Join(dir, "migpro-agent")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	for i := 0; i < b.N; i++ {
		rss := fillAndMeasure(b, bin, filepath.Join(dir, strconv.Itoa(i)))
		b.ReportMetric(float64(rss)/(1<<20), "rss-MiB")
	}
}

func fillAndMeasure(b *testing.B, bin, dir string) uint64 {
	sock := filepath.Join(dir, "a.sock")
	cmd := exec.Command(bin, "--simulate", "a100-40gb:8", "--sim-root", filepath.Join(dir, "sim"), "--state-dir", filepath.Join(dir, "state"),
		"--socket", sock, "--cdi-dir", filepath.Join(dir, "cdi"), "--plugin-dir", "", "--pod-resources", "", "--telemetry-dir", filepath.Join(dir, "run"),
		"--log-level", "warn")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	c := client.New(sock)
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := c.Status(ctx); err == nil {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("agent did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i := 0; i < 56; i++ {
		if _, err := c.Alloc(ctx, client.AllocRequest{Profile: "1g.5gb"}); err != nil {
			b.Fatalf("alloc %d: %v", i, err)
		}
	}
	if _, err := c.Alloc(ctx, client.AllocRequest{Profile: "1g.5gb"}); err == nil {
		b.Fatal("the 57th 1g.5gb fit: the GPUs are not full")
	}
	return vmRSS(b, cmd.Process.Pid)
}

func vmRSS(b *testing.B, pid int) uint64 {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmRSS")
	return 0
}
