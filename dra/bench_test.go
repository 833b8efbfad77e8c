package dra_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/migpro/migpro/dra"
	"github.com/migpro/migpro/internal/quietlog"
	"github.com/migpro/migpro/partitioner"
)

// BenchmarkChurn prepares six 1g.5gb claims on two A100s through the
// driver's gRPC, each on the first device the slices offer (as the
// scheduler would), and reports what the API server took per created
// instance: ResourceSlice writes (slice-writes/instance, creates and
// updates; the slice controller writes only the slices that changed), the
// driver's publishes (publishes/instance), writes per publish, the bytes
// of each write (B/write, protobuf, as stored) and of the whole pool per
// publish (pool-B/publish). It also reports one
// rebuild of the node's slices on eight A100s (rebuild-µs): every profile
// at every placement ranked by the partitioner's pinned plans.
func BenchmarkChurn(b *testing.B) {
	for i := 0; i < b.N; i++ {
		e := newEnv(b, "a100-40gb:2")
		e.start()
		writes, size := e.sliceWriteBytes()
		pubs := metric(b, e.agent, "migpro_dra_slice_publishes_total")
		pubBytes := metric(b, e.agent, "migpro_dra_slice_publish_bytes_total")
		const n = 6
		for k := 0; k < n; k++ {
			dev := e.firstOf("1g.5gb")
			if r := e.prepare(e.claim("c"+strconv.Itoa(k), dev)); r.Error != "" {
				b.Fatal(r.Error)
			}
			waitFor(b, "the republish", func() bool { return e.firstOf("1g.5gb") != dev })
		}
		time.Sleep(200 * time.Millisecond) // let the controller finish
		w, sz := e.sliceWriteBytes()
		p := metric(b, e.agent, "migpro_dra_slice_publishes_total") - pubs
		b.ReportMetric(float64(w-writes)/n, "slice-writes/instance")
		b.ReportMetric(p/n, "publishes/instance")
		b.ReportMetric(float64(w-writes)/max(p, 1), "writes/publish")
		b.ReportMetric(float64(sz-size)/float64(max(w-writes, 1)), "B/write")
		b.ReportMetric((metric(b, e.agent, "migpro_dra_slice_publish_bytes_total")-pubBytes)/max(p, 1), "pool-B/publish")
		e.stop()
	}
	big := newEnv(b, "a100-40gb:8")
	a := big.open()
	if err := a.Open(b.Context()); err != nil {
		b.Fatal(err)
	}
	for g := 0; g < 4; g++ {
		if _, _, err := a.Partitioner().AllocateAt(b.Context(), "2g.10gb", &partitioner.Pin{GPU: g, Start: 2}, "kubelet"); err != nil {
			b.Fatal(err)
		}
	}
	d, err := dra.New(a, big.cs, nodeName, dra.WithLogger(quietlog.New()))
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	const rounds = 10
	for r := 0; r < rounds; r++ {
		d.Slices()
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/rounds, "rebuild-µs")
}
