package telemetry

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// registerMetrics exposes the atomic counters as prometheus metrics. They
// carry no container label on purpose: ids are unbounded, the counters are not.
func (s *Service) registerMetrics(r prometheus.Registerer) error {
	results := map[string]*atomic.Uint64{
		"accepted": &s.st.accepted, "malformed": &s.st.malformed, "oversized": &s.st.oversized,
		"rate_limited": &s.st.rateLimited, "too_many_processes": &s.st.tooManyProcs, "stale": &s.st.stale,
		"foreign": &s.st.foreign,
	}
	for result, v := range results {
		c := prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "migpro_telemetry_datagrams_total",
			Help:        "Shim datagrams received from containers, by what became of them.",
			ConstLabels: prometheus.Labels{"result": result},
		}, func() float64 { return float64(v.Load()) })
		if err := r.Register(c); err != nil {
			return err
		}
	}
	for _, c := range []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "migpro_telemetry_poll_errors_total", Help: "Failed instance-memory polls.",
		}, func() float64 { return float64(s.st.pollErrors.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "migpro_telemetry_rejected_registrations_total", Help: "Container registrations refused (invalid or over the limit).",
		}, func() float64 { return float64(s.st.rejected.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "migpro_telemetry_containers", Help: "Containers registered for telemetry.",
		}, func() float64 {
			s.mu.RLock()
			defer s.mu.RUnlock()
			return float64(len(s.containers))
		}),
	} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}
