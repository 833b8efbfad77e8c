package telemetry

import (
	"github.com/migpro/migpro/internal/quietlog"
	"net"
	"testing"
)

// BenchmarkIngest is the agent's per-sample cost without the socket: decode,
// bounds, aggregate, ring, publish. ns/op → samples/s = 1e9/ns.
func BenchmarkIngest(b *testing.B) {
	s, err := New(WithLogger(quietlog.New()), WithStateDir(b.TempDir()), WithPIDCheck(nil), WithRate(1e9, 1e9))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Register(Registration{ID: "bench"}); err != nil {
		b.Fatal(err)
	}
	c := s.get("bench")
	s.OnSample(func(string, Sample) {})
	buf := make([]byte, WireSize)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		m := Encode(buf, Message{Seq: uint64(i + 1), Current: uint64(i), Peak: uint64(i)})
		if !s.ingest(c, 1, m, false) {
			b.Fatal("rate limited")
		}
	}
}

// BenchmarkIngestSocket measures the whole path through a real unixgram
// socket and the reader goroutine: one op is one datagram sent and accounted.
func BenchmarkIngestSocket(b *testing.B) {
	dir, err := osMkdirTemp()
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(WithLogger(quietlog.New()), WithStateDir(dir), WithPIDCheck(nil), WithRate(1e9, 1e9), WithRingSize(1024))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ep, err := s.Register(Registration{ID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: ep.Socket, Net: "unixgram"})
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	buf := make([]byte, WireSize)
	b.ResetTimer()
	for i := range b.N {
		// Blocking sends: the kernel queue pushes back instead of dropping.
		if _, err := conn.Write(Encode(buf, Message{Seq: uint64(i + 1), Current: 1, Peak: 1})); err != nil {
			b.Fatal(err)
		}
	}
	for s.Stats().Accepted < uint64(b.N) {
		if st := s.Stats(); st.Malformed+st.RateLimited+st.Stale > 0 {
			b.Fatalf("dropped: %+v", st)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

func osMkdirTemp() (string, error) { return mkdirTemp() }
