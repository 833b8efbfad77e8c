package agent

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/partitioner"
)

func TestCheckpointNullIsCorrupt(t *testing.T) {
	for _, body := range []string{"null", " null\n", "{}", "[1]", "{\"version\":1,\"holders\":", "\x00\x01"} {
		dir := t.TempDir()
		s, err := newCheckpointStore(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "checkpoint.json"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Load(); !errors.Is(err, errCorruptCheckpoint) {
			t.Errorf("checkpoint %q: Load gave %v, want a corrupt-checkpoint error", body, err)
		}
	}
}

// TestCorruptCheckpointSetAsideAndRecovered: a checkpoint of `null` (which
// once started the agent and silently dropped its holders) is moved aside
// with one clear line, and the agent rebuilds from NVML and PodResources.
func TestCorruptCheckpointSetAsideAndRecovered(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	e.cfg.WarmPool = map[string]int{"1g.5gb": 1}
	a := e.start(t)
	a.Maintain(context.Background())
	devs := a.inv.Devices("1g.5gb")
	if len(devs) != 1 {
		t.Fatalf("warm pool %v", devs)
	}
	kube := devs[0].ID
	if err := a.allocateCheck(context.Background(), "1g.5gb", []string{kube}); err != nil {
		t.Fatal(err)
	}
	e.pods.Assign(kube, PodRef{Namespace: "ns", Name: "pod-a", Container: "c"})
	local, err := a.Alloc(context.Background(), client.AllocRequest{Profile: "2g.10gb", Owner: "job"})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(e.cfg.StateDir, "checkpoint.json")
	if err := os.WriteFile(path, []byte("null"), 0o600); err != nil {
		t.Fatal(err)
	}

	var logs bytes.Buffer
	l := logrus.New()
	l.SetOutput(&logs)
	b, err := New(e.cfg, GPU{Node: e.node}, WithAssignments(e.pods), WithLogger(l))
	if err == nil {
		err = b.Open(context.Background())
	}
	if err != nil {
		t.Fatalf("agent refused to start on a corrupt checkpoint: %v", err)
	}
	aside, _ := filepath.Glob(path + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("corrupt checkpoint not set aside: %v", aside)
	}
	if got, _ := os.ReadFile(aside[0]); string(got) != "null" {
		t.Fatalf("set-aside file holds %q", got)
	}
	var lines []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "corrupt checkpoint") {
			lines = append(lines, line)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "level=error") || !strings.Contains(lines[0], "JSON null") {
		t.Fatalf("want one error line naming the corrupt checkpoint, got %q", lines)
	}
	if in, err := b.part.Find(kube); err != nil || in.State != partitioner.InUse || in.Owner != ownerKubelet {
		t.Fatalf("kubelet-held instance after recovery: %+v %v (want in use by the kubelet, from PodResources)", in, err)
	}
	// The local holder is lost with the checkpoint, but its instance is not
	// destroyed: it stays, idle, found through NVML.
	if in, err := b.part.Find(local.UUID); err != nil || in.State != partitioner.Idle {
		t.Fatalf("locally held instance after recovery: %+v %v (want still there, idle)", in, err)
	}
	cp, err := b.ckpt.Load()
	if err != nil || cp.Holders[kube].Owner != ownerKubelet {
		t.Fatalf("fresh checkpoint %+v %v", cp, err)
	}
}

func TestNewerCheckpointVersionStillRefused(t *testing.T) {
	dir := t.TempDir()
	s, _ := newCheckpointStore(dir)
	os.WriteFile(filepath.Join(dir, "checkpoint.json"), []byte(`{"version":99,"holders":{}}`), 0o600)
	if _, err := s.Load(); err == nil || errors.Is(err, errCorruptCheckpoint) {
		t.Fatalf("a newer agent's checkpoint: %v, want a refusal that is not 'corrupt'", err)
	}
}
