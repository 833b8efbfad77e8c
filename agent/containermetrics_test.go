package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/migpro/migpro/client"
)

// TestContainerMemoryOnMetrics: /metrics has each running container's GPU
// memory, labelled with its pod, and the series ends with the container.
func TestContainerMemoryOnMetrics(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	e.cfg.PollEvery = 5 * time.Millisecond
	e.cfg.MetricsAddr = "127.0.0.1:0"
	a := e.start(t)
	c := runAgent(t, a)
	r, err := c.Alloc(context.Background(), client.AllocRequest{Profile: "1g.5gb"})
	if err != nil {
		t.Fatal(err)
	}
	in, _ := a.part.Find(r.UUID)
	const used = 3 << 30
	e.node.SetInstanceMemoryUsed(in.GPU, in.GIID, used)
	registerWith(t, a.cfg.Socket, map[string]any{"id": "train-0123456789abcdef", "pid": 1, "migUUIDs": []string{r.UUID},
		"podNamespace": "ml", "podName": "train-0", "containerName": "trainer"})
	labels := `container="trainer",container_id="train-012345",mig_uuid="` + r.UUID + `",namespace="ml",pod="train-0"`
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, body := get(t, a, PathMetrics)
		if v := sample(t, body, "migpro_container_memory_used_bytes", strings.ReplaceAll(labels, ".", `\.`)); v == used {
			if p := sample(t, body, "migpro_container_memory_peak_bytes", strings.ReplaceAll(labels, ".", `\.`)); p < used {
				t.Fatalf("peak %v below used %d", p, used)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no migpro_container_memory_used_bytes{%s} %d:\n%s", labels, used, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
