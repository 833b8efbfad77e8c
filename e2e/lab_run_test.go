//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/oci"

	"github.com/migpro/migpro/e2e/harness"
	"github.com/migpro/migpro/telemetry/telemetryapi"
)

// The workload of TestLabRun: 4 GiB at once (the weights), then 10 MiB
// every 400 ms for 40 s (activations), 5096 MiB in all. On a 1g.5gb
// (4864 MiB) it would run out of memory after about 31 s of growth. The
// agent's predictor reads seconds (predictor.ForSeconds: 2 s bins, 24 s
// before any mark, a loading grace), so a ramp of a few seconds is a load,
// not growth; this one is marked once it has grown for 24 s, several
// seconds before the capacity, and recommends 1g.10gb, on which the same
// growth is far from the capacity and is never marked.
const (
	runBaseBytes = 4 << 30
	runStepBytes = 10 << 20
	runSteps     = 100
	// runStepMillis is the pause between steps.
	runStepMillis = 400
)

// migpro-lab run against the real agent (hook and shim in the CDI spec) and a
// real containerd: the growing pattern is restarted on a larger instance
// before its first run's bytes reach the first instance's capacity, the
// second run completes on the larger instance, and nothing is left: no
// instance, no container, no registration.
func TestLabRun(t *testing.T) {
	e := newHookEnv(t)
	a := startAgent(t, "a100-40gb", "--hook", e.hookBin, "--shim", e.art.Shim, "--poll-every", "100ms")
	c := harness.StartContainerd(t)
	const ns, image, id = "migpro-e2e-run", "migpro-e2e.test/grow:1", "grow"
	archive := filepath.Join(t.TempDir(), "grow.tar")
	if err := harness.WriteOCIArchive(archive, harness.ImageSpec{Name: image, Rootfs: e.rootfs(t), Entrypoint: []string{"/app/pattern"}}); err != nil {
		t.Fatal(err)
	}
	c.ImportArchive(t, ns, archive)

	// Watch migctl top while it runs: the shim's bytes per container.
	tops := &topLog{peak: map[string]uint64{}, capacity: map[string]uint64{}, uuid: map[string]string{}}
	stopWatch := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stopWatch:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if out, err := a.migctl(t, "top", "--output", "json"); err == nil {
				tops.add(out)
			}
		}
	}()

	args := []string{"run", "--socket", a.Socket, "--containerd", c.Socket, "--namespace", ns, "--id", id,
		"--profile", "1g.5gb", "--max-restarts", "1", "--poll", "100ms", "--stop-timeout", "1s",
		"--cdi-dir", harness.CDIDir, "--runc-binary", harness.RuncPath, "--runc-root", c.RuncRoot,
		image, "/app/pattern", fmt.Sprintf("alloc:%d", runBaseBytes), fmt.Sprintf("grow:%d:%d:%d", runStepBytes, runSteps, runStepMillis)}
	cmd := exec.Command(migproBin(t, "migpro-lab"), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	close(stopWatch)
	<-watched
	t.Logf("migpro-lab run took %v\nstderr:\n%s", time.Since(start).Round(time.Millisecond), stderr.String())
	if err != nil {
		t.Fatalf("migpro-lab run: %v\nstdout tail:\n%s\nagent log:\n%s", err, lastLines(stdout.String(), 10), a.logTail())
	}

	// The restart line, and the profile it moved to.
	m := regexp.MustCompile(`migpro-lab run: predicted out of memory at (\d+)% of 1g\.5gb \(.*\): restarting on (\S+) \(restart 1 of 1\)`).
		FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no restart line in stderr:\n%s\nagent log:\n%s", stderr.String(), a.logTail())
	}
	next := m[2]
	// Usage at the mark: past the 4 GiB base (84%), short of the capacity.
	if pct, _ := strconv.Atoi(m[1]); pct < 84 || pct >= 100 {
		t.Errorf("mark at %d%% of the 1g.5gb, want 84%% to 99%%", pct)
	}
	if strings.Count(stderr.String(), "predicted out of memory") != 1 {
		t.Errorf("the second run was marked too:\n%s", stderr.String())
	}

	// The program's own account of each run.
	runs := growRuns(t, stdout.String())
	if len(runs) != 2 {
		t.Fatalf("want two runs of the pattern, got %d:\n%s", len(runs), lastLines(stdout.String(), 20))
	}
	const capacity1 = 4864 << 20 // 1g.5gb on an A100-40GB, as NVML reports it
	first, second := runs[0], runs[1]
	// The container may have allocated one more step after its last line.
	if first.steps >= runSteps || first.live+runStepBytes >= capacity1 {
		t.Errorf("first run got to step %d with %d bytes (+%d unprinted): not stopped before the 1g.5gb's %d bytes",
			first.steps, first.live, runStepBytes, capacity1)
	}
	wantFinal := uint64(runBaseBytes + runSteps*runStepBytes)
	if second.steps != runSteps || second.live != wantFinal || wantFinal <= capacity1 {
		t.Errorf("second run ended at step %d with %d bytes; want %d/%d with %d bytes (more than a 1g.5gb holds)",
			second.steps, second.live, runSteps, runSteps, wantFinal)
	}

	// What migctl top showed while it ran: the shim's bytes for the first
	// container stayed under its instance's capacity, and the second ran on
	// a larger instance.
	tops.mu.Lock()
	peak1, cap1, cap2 := tops.peak[id], tops.capacity[id], tops.capacity[id+"-r1"]
	uuid1, uuid2 := tops.uuid[id], tops.uuid[id+"-r1"]
	peak2 := tops.peak[id+"-r1"]
	tops.mu.Unlock()
	t.Logf("top: %s on %s peaked at %d of %d; %s-r1 on %s (%s) peaked at %d of %d", id, uuid1, peak1, cap1, id, uuid2, next, peak2, cap2)
	if cap1 != capacity1 || peak1 == 0 || peak1 >= cap1 {
		t.Errorf("top showed %s at %d bytes of %d; want some bytes, under %d", id, peak1, cap1, uint64(capacity1))
	}
	if cap2 <= cap1 || uuid2 == "" || uuid2 == uuid1 {
		t.Errorf("restart on %s: top showed capacity %d on %q, want more than %d on a new instance", next, cap2, uuid2, cap1)
	}

	// Nothing left: instances, registrations, containers.
	if st := a.status(t); len(st.Instances) != 0 {
		t.Errorf("instances left after migpro-lab run: %+v", st.Instances)
	}
	waitDeregistered(t, a, id)
	waitDeregistered(t, a, id+"-r1")
	ctrs, err := c.Client.Containers(c.Context(ns))
	if err != nil || len(ctrs) != 0 {
		t.Errorf("containers left in %s: %d (%v)", ns, len(ctrs), err)
	}
}

// topLog keeps, per container, the largest shim bytes and the capacity
// migctl top showed.
type topLog struct {
	mu       sync.Mutex
	peak     map[string]uint64
	capacity map[string]uint64
	uuid     map[string]string
}

func (l *topLog) add(out string) {
	var top telemetryapi.Top
	if json.Unmarshal([]byte(out), &top) != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range top.Containers {
		l.peak[c.ID] = max(l.peak[c.ID], c.ShimBytes)
		if c.CapacityBytes > 0 {
			l.capacity[c.ID] = c.CapacityBytes
		}
		if len(c.MIGUUIDs) > 0 {
			l.uuid[c.ID] = c.MIGUUIDs[0]
		}
	}
}

// growRun is one run of the pattern as its output tells it: the last grow
// step printed and the bytes it held then.
type growRun struct {
	steps int
	live  uint64
}

var growLine = regexp.MustCompile(`^grow (\d+)/(\d+) live=(\d+)$`)

// growRuns splits the pattern's output into runs: the step count starts
// again at 1 on each run.
func growRuns(t *testing.T, out string) []growRun {
	t.Helper()
	var runs []growRun
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		m := growLine.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("unexpected output line %q", line)
			continue
		}
		step, _ := strconv.Atoi(m[1])
		live, _ := strconv.ParseUint(m[3], 10, 64)
		if step == 1 || len(runs) == 0 {
			runs = append(runs, growRun{})
		}
		r := &runs[len(runs)-1]
		if step != r.steps+1 {
			t.Errorf("step %d after %d in one run", step, r.steps)
		}
		r.steps, r.live = step, live
	}
	return runs
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// migpro-lab run's exits with real parts: the container's own exit code, the
// agent's refusal of an unknown profile (2), and SIGINT while the container
// runs (130, after SIGTERM then SIGKILL to a PID 1 that ignores SIGTERM).
// Each leaves no instance and no container.
func TestLabRunExitsAndInterrupt(t *testing.T) {
	a := startAgent(t, "a100-40gb")
	c := harness.StartContainerd(t)
	const ns = "migpro-e2e-run"
	c.ImportArchive(t, ns, harness.BusyboxImage(t))
	migctl := func(id string, cmdArgs ...string) *exec.Cmd {
		args := []string{"run", "--socket", a.Socket, "--containerd", c.Socket, "--namespace", ns, "--id", id,
			"--poll", "100ms", "--stop-timeout", "1s", "--cdi-dir", harness.CDIDir,
			"--runc-binary", harness.RuncPath, "--runc-root", c.RuncRoot}
		return exec.Command(migproBin(t, "migpro-lab"), append(args, cmdArgs...)...)
	}
	nothingLeft := func(t *testing.T) {
		t.Helper()
		if st := a.status(t); len(st.Instances) != 0 {
			t.Errorf("instances left: %+v", st.Instances)
		}
		if ctrs, err := c.Client.Containers(c.Context(ns)); err != nil || len(ctrs) != 0 {
			t.Errorf("containers left in %s: %d (%v)", ns, len(ctrs), err)
		}
	}

	t.Run("exit code", func(t *testing.T) {
		out, err := migctl("exit7", "--profile", "1g.5gb", harness.BusyboxImageName, "sh", "-c", "echo $NVIDIA_VISIBLE_DEVICES; exit 7").Output()
		if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 7 {
			t.Errorf("migpro-lab run: %v, want exit 7", err)
		}
		if !strings.HasPrefix(string(out), "MIG-") {
			t.Errorf("container output %q, want its MIG UUID", out)
		}
		nothingLeft(t)
	})

	t.Run("unknown profile", func(t *testing.T) {
		out, err := migctl("bad", "--profile", "9g.1tb", harness.BusyboxImageName, "true").CombinedOutput()
		if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "offered: [") {
			t.Errorf("migpro-lab run: %v: %s; want exit 2 with the offered profiles", err, out)
		}
		nothingLeft(t)
	})

	t.Run("id in use", func(t *testing.T) {
		ctx := c.Context(ns)
		img, err := c.Client.GetImage(ctx, harness.BusyboxImageName)
		if err != nil {
			t.Fatal(err)
		}
		other, err := c.Client.NewContainer(ctx, "taken", client.WithImage(img),
			client.WithNewSnapshot("taken-own", img), client.WithNewSpec(oci.WithImageConfig(img)))
		if err != nil {
			t.Fatal(err)
		}
		out, err := migctl("taken", "--profile", "1g.5gb", harness.BusyboxImageName, "true").CombinedOutput()
		if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), `container "taken" already exists`) {
			t.Errorf("migpro-lab run: %v: %s; want exit 1, id in use", err, out)
		}
		if _, err := c.Client.LoadContainer(ctx, "taken"); err != nil {
			t.Errorf("the other container is gone: %v", err)
		}
		if _, err := c.Client.SnapshotService("overlayfs").Stat(ctx, "taken-snapshot"); err == nil {
			t.Error("a snapshot taken-snapshot was left behind")
		}
		if err := other.Delete(ctx, client.WithSnapshotCleanup); err != nil {
			t.Fatal(err)
		}
		nothingLeft(t)
	})

	t.Run("SIGINT", func(t *testing.T) {
		cmd := migctl("sleeper", "--profile", "1g.10gb", harness.BusyboxImageName, "sleep", "600")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the sleeper's container", 30*time.Second, func() bool {
			ctrs, err := c.Client.Containers(c.Context(ns))
			return err == nil && len(ctrs) == 1 && len(a.status(t).Instances) == 1
		})
		time.Sleep(300 * time.Millisecond) // let the task start
		cmd.Process.Signal(syscall.SIGINT)
		err := cmd.Wait()
		if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Errorf("migpro-lab run: %v, want exit 130\n%s", err, stderr.String())
		}
		if !strings.Contains(stderr.String(), "interrupted: stopping sleeper") {
			t.Errorf("stderr %q", stderr.String())
		}
		nothingLeft(t)
	})
}
