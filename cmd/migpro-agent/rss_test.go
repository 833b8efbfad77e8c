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
// the real binary, built as make image builds it (target: under 64 MiB).
// ns/op is the fill time and means little; read rss-MiB, and its split:
// rss-anon-MiB (heap, stacks, runtime) against rss-file-MiB (the binary's
// mapped text and data, shared page cache).
func BenchmarkAgentRSS(b *testing.B) {
	dir := b.TempDir()
	bin := filepath.Join(dir, "migpro-agent")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	for i := 0; i < b.N; i++ {
		m := fillAndMeasure(b, bin, filepath.Join(dir, strconv.Itoa(i)))
		b.ReportMetric(float64(m["VmRSS"])/(1<<20), "rss-MiB")
		b.ReportMetric(float64(m["RssAnon"])/(1<<20), "rss-anon-MiB")
		b.ReportMetric(float64(m["RssFile"])/(1<<20), "rss-file-MiB")
	}
}

func fillAndMeasure(b *testing.B, bin, dir string) map[string]uint64 {
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
	return memStatus(b, cmd.Process.Pid)
}

// memStatus reads the resident-memory lines of /proc/PID/status, in bytes.
func memStatus(b *testing.B, pid int) map[string]uint64 {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	m := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && !strings.HasPrefix(key, "Rss")) {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		m[key] = kb << 10
	}
	if m["VmRSS"] == 0 {
		b.Fatal("no VmRSS")
	}
	return m
}
