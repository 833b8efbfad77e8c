package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/migpro/migpro/agent"
	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/estimator"
	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/internal/ctl"
	"github.com/migpro/migpro/internal/quietlog"
	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/telemetry/telemetryapi"
)

// demoPrediction is the second act of the demo: the real agent on a
// simulated A100 watches an inference server whose memory grows (a KV cache
// filling up), predicts that it will run out of its 1g.5gb instance, and the
// server is moved to the recommended profile before it does.
func demoPrediction(stdout io.Writer, seed int64) error {
	dir, err := os.MkdirTemp("", "migctl-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	node, err := simgpu.NewNode("a100-40gb", simgpu.WithSeed(seed), simgpu.WithRoot(filepath.Join(dir, "sim")))
	if err != nil {
		return err
	}
	defer node.Close()
	a, err := agent.New(agent.Config{Socket: filepath.Join(dir, "agent.sock"), StateDir: filepath.Join(dir, "state"),
		CDISpecDir: filepath.Join(dir, "cdi"), TelemetryDir: filepath.Join(dir, "run"), PollEvery: 20 * time.Millisecond,
		// The demo plays minutes of growth in four seconds: the predictor's
		// time bins shrink with it (the agent's own are 2 s).
		Predictor: func(c predictor.Config) predictor.Config { c.Bin = 0.02; return c }},
		agent.GPU{Node: node}, agent.WithLogger(quietlog.New()))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() { cancel(); <-done }()
	c := client.New(filepath.Join(dir, "agent.sock"))
	if err := waitAgent(ctx, c); err != nil {
		return err
	}

	fmt.Fprintln(stdout, "\nAct 2: predicting an out-of-memory on the real agent (simulated A100-40GB)")
	first, err := c.Alloc(ctx, client.AllocRequest{Profile: "1g.5gb", Owner: "llm-serve"})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "  llm-serve starts on 1g.5gb (%s), its KV cache growing with every request\n", first.UUID[:12])
	if _, err := c.Register(ctx, telemetryapi.Registration{ID: "llm-serve", PID: os.Getpid(), MIGUUIDs: []string{first.UUID}}); err != nil {
		return err
	}
	in, err := a.Partitioner().Find(first.UUID)
	if err != nil {
		return err
	}
	capacity, err := instanceCapacity(a, first.UUID)
	if err != nil {
		return err
	}
	// Memory grows from 15% to 100% of the instance over four seconds.
	const rampFor = 4 * time.Second
	start, nextReport := time.Now(), 0.0
	for {
		frac := 0.15 + 0.85*float64(time.Since(start))/float64(rampFor)
		if frac >= 1 {
			fmt.Fprintln(stdout, "  llm-serve ran out of memory before any mark")
			return errors.New("no mark before the instance filled up")
		}
		used := uint64(frac * float64(capacity))
		node.SetInstanceMemoryUsed(in.GPU, in.GIID, used)
		if frac >= nextReport {
			fmt.Fprintf(stdout, "  t=%.1fs  %s of %s used\n", time.Since(start).Seconds(), estimator.FormatBytes(used), estimator.FormatBytes(capacity))
			nextReport = frac + 0.1
		}
		marks, err := c.Marks(ctx)
		if err != nil {
			return err
		}
		if d, ok := marks["llm-serve"]; ok {
			fmt.Fprintf(stdout, "  MARK at %.0f%% of the instance: forecast %s (%s) -> move to %s\n",
				100*frac, estimator.FormatBytes(d.Forecast), d.Reason, d.Profile)
			return moveTo(ctx, stdout, a, c, first, d.Profile)
		}
		time.Sleep(40 * time.Millisecond)
	}
}

// moveTo readmits the server on a larger instance, as migpro-lab run does for
// containerd and the eviction plus webhook do for Kubernetes.
func moveTo(ctx context.Context, stdout io.Writer, a *agent.Agent, c *client.Client, from client.AllocResponse, profile string) error {
	if err := c.Free(ctx, from.CDIName); err != nil {
		return err
	}
	to, err := c.Alloc(ctx, client.AllocRequest{Profile: profile, Owner: "llm-serve"})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "  llm-serve restarted on %s (%s), before it ran out of memory\n\n", to.Profile, to.UUID[:12])
	st, err := c.Status(ctx)
	if err != nil {
		return err
	}
	ctl.DrawStatus(stdout, st)
	return nil
}

func instanceCapacity(a *agent.Agent, uuid string) (uint64, error) {
	_, total, err := a.InstanceMemory(uuid)
	return total, err
}

func waitAgent(ctx context.Context, c *client.Client) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := c.Status(ctx); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			return fmt.Errorf("the demo agent did not start: %w", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
