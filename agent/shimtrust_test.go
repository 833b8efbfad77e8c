package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/telemetry"
)

// A container's shim datagrams claiming its 1g.5gb is full, while the
// driver reports it empty, mark nothing: the shim never outvotes NVML.
func TestShimClaimsNeverOutvoteNVML(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	e.cfg.PollEvery = 10 * time.Millisecond
	e.cfg.Predictor = func(c predictor.Config) predictor.Config {
		c.Bin = 0.02
		return predictor.ForSeconds(c)
	}
	a := e.start(t)
	c := runAgent(t, a)
	in, err := c.Alloc(context.Background(), client.AllocRequest{Profile: "1g.5gb", Owner: "liar"})
	if err != nil {
		t.Fatal(err)
	}
	_, total, err := a.InstanceMemory(in.UUID)
	if err != nil {
		t.Fatal(err)
	}
	ep := registerWith(t, a.cfg.Socket, map[string]any{"id": "liar", "pid": os.Getpid(), "migUUIDs": []string{in.UUID}})
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: ep.Socket, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	buf := make([]byte, telemetry.WireSize)
	claim := total // the whole instance, at once
	for seq := uint64(1); seq <= 40; seq++ {
		m := telemetry.Message{Seq: seq, PID: uint32(os.Getpid()), Current: claim, Peak: claim, Allocs: 1}
		if _, err := conn.Write(telemetry.Encode(buf, m)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(25 * time.Millisecond)
	}
	waitFor(t, "the datagrams handled", func() bool { return a.watch.svc.Stats().Accepted >= 40 })
	if m := getMarks(t, a.cfg.Socket); len(m) != 0 {
		t.Fatalf("the shim's claim of %d bytes, with the driver reporting the instance empty, marked %+v", claim, m)
	}
}

// A registration is tied only to the instances held on this node: a MIG
// UUID that does not exist (or is idle) is dropped, and a registration
// naming none held is refused.
func TestRegistrationOnlyNamesHeldInstances(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	a := e.start(t)
	c := runAgent(t, a)
	in, err := c.Alloc(context.Background(), client.AllocRequest{Profile: "1g.5gb"})
	if err != nil {
		t.Fatal(err)
	}
	const ghost = "MIG-00000000-0000-0000-0000-000000000000"
	registerWith(t, a.cfg.Socket, map[string]any{"id": "mixed", "pid": os.Getpid(), "migUUIDs": []string{ghost, in.UUID}})
	top, err := c.Top(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Containers) != 1 || len(top.Containers[0].MIGUUIDs) != 1 || top.Containers[0].MIGUUIDs[0] != in.UUID {
		t.Fatalf("registered %+v, want only %s", top.Containers, in.UUID)
	}
	body, _ := json.Marshal(map[string]any{"id": "ghost", "pid": os.Getpid(), "migUUIDs": []string{ghost}})
	resp, err := unixHTTP(a.cfg.Socket).Post("http://agent"+client.PathContainers, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("registration of a MIG UUID that does not exist: %s, want 400", resp.Status)
	}
}
