package ctltest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/migpro/migpro/agent"
	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/internal/quietlog"
)

// Agent runs an agent whose CDI kind is kind and whose simulated UUIDs come
// from seed, until the test ends, and returns its socket once it answers.
func Agent(t testing.TB, kind string, seed int64) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "mctl")
	if err != nil {
		t.Fatal(err)
	}
	node, err := simgpu.NewNode("a100-40gb", simgpu.WithSeed(seed), simgpu.WithRoot(filepath.Join(dir, "sim")), simgpu.WithLogger(quietlog.New()))
	if err != nil {
		t.Fatal(err)
	}
	log := quietlog.New()
	sock := filepath.Join(dir, "a.sock")
	a, err := agent.New(agent.Config{StateDir: filepath.Join(dir, "state"), Socket: sock,
		CDISpecDir: filepath.Join(dir, "cdi"), CDIKind: kind, TelemetryDir: filepath.Join(dir, "run")},
		agent.GPU{Node: node}, agent.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; node.Close(); os.RemoveAll(dir) })
	c := client.New(sock)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := c.Status(context.Background()); err == nil {
			return sock
		} else if time.Now().After(deadline) {
			t.Fatalf("agent did not answer: %v", err)
		}
	}
}
