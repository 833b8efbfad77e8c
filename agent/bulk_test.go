package agent

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/telemetry"
)

// TestAllocationCallsTellALoadFromGrowth drives the shim's count of driver
// allocation calls through the agent's real entry points: three containers
// register over the local API as the hook does and send shim datagrams to
// their telemetry sockets, all rising at the same rate from 10% of their
// instance. One grows through to capacity in 16 MiB calls and must be marked
// before it gets there. Two stop at 88%: one in 16 MiB calls, which reads as
// growth heading for the OOM and is marked; one in 256 MiB calls, a load,
// which is not. The agent's settings for seconds, on 20 ms bins. The
// simulated driver reports the same figures as the shim: the shim's never
// count above NVML's.
func TestAllocationCallsTellALoadFromGrowth(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	e.cfg.Predictor = func(c predictor.Config) predictor.Config {
		c.Bin = 0.02
		return predictor.ForSeconds(c)
	}
	e.cfg.PollEvery = 10 * time.Millisecond
	a := e.start(t)
	c := runAgent(t, a)
	type feed struct {
		id         string
		call, stop float64 // bytes per allocation call; where the rise stops (share of capacity)
		conn       *net.UnixConn
		capacity   float64
		gpu, giid  int
	}
	feeds := []*feed{{id: "grower", call: 16 << 20, stop: 1}, {id: "small-calls", call: 16 << 20, stop: 0.88}, {id: "loader", call: 256 << 20, stop: 0.88}}
	for _, f := range feeds {
		in, err := c.Alloc(context.Background(), client.AllocRequest{Profile: "1g.5gb"})
		if err != nil {
			t.Fatal(err)
		}
		_, total, err := a.InstanceMemory(in.UUID)
		if err != nil {
			t.Fatal(err)
		}
		f.capacity = float64(total)
		held, err := a.part.Find(in.UUID)
		if err != nil {
			t.Fatal(err)
		}
		f.gpu, f.giid = held.GPU, held.GIID
		ep := registerWith(t, a.cfg.Socket, map[string]any{"id": f.id, "pid": os.Getpid(), "migUUIDs": []string{in.UUID}})
		if f.conn, err = net.DialUnix("unixgram", nil, &net.UnixAddr{Name: ep.Socket, Net: "unixgram"}); err != nil {
			t.Fatal(err)
		}
		defer f.conn.Close()
	}
	// 10% to 100% of capacity in 3.6 s: 88% is 0.48 s from capacity, more
	// than a load's lead (0.08 × elapsed, about 0.25 s) and less than
	// growth's (0.25 × elapsed, about 0.8 s).
	const rampFor = 3.6
	start := time.Now()
	buf := make([]byte, telemetry.WireSize)
	var seq uint64
	grownAt := 0.0
	for el := 0.0; el < rampFor+1; el = time.Since(start).Seconds() {
		seq++
		for _, f := range feeds {
			share := min(0.1+0.9*el/rampFor, f.stop)
			if share >= 1 {
				continue
			}
			cur := uint64(share * f.capacity)
			if err := e.node.SetInstanceMemoryUsed(f.gpu, f.giid, cur); err != nil {
				t.Fatal(err)
			}
			m := telemetry.Message{Seq: seq, PID: uint32(os.Getpid()), Current: cur, Peak: cur, Allocs: 1 + uint64(float64(cur)/f.call)}
			if _, err := f.conn.Write(telemetry.Encode(buf, m)); err != nil {
				t.Fatalf("%s: send: %v", f.id, err)
			}
		}
		marks := getMarks(t, a.cfg.Socket)
		if _, ok := marks["grower"]; ok && grownAt == 0 {
			grownAt = 0.1 + 0.9*el/rampFor
		}
		time.Sleep(20 * time.Millisecond)
	}
	marks := getMarks(t, a.cfg.Socket)
	if grownAt == 0 {
		t.Errorf("the grower was not marked before its instance filled up (marks %+v)", marks)
	}
	if _, ok := marks["small-calls"]; !ok {
		t.Errorf("a rise in 16 MiB calls that stops at 88%% was not marked: the series no longer tests the calls (marks %+v)", marks)
	}
	if d, ok := marks["loader"]; ok {
		t.Errorf("a load in 256 MiB calls was marked: %+v", d)
	}
	t.Logf("grower marked at %.0f%% of capacity; small-calls marked %v; loader marked %v", 100*grownAt, marks["small-calls"].Reason != "", marks["loader"].Reason != "")
}
