package dra

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the driver's Prometheus families, in the agent's registry
// (what --metrics-addr serves).
type metrics struct {
	// prepared counts devices prepared for a claim for the first time (a
	// repeated Prepare is not counted); notPreferred those of them the
	// scheduler allocated at a placement other than migpro's first
	// preference at that moment: it read a stale slice.
	prepared, notPreferred prometheus.Counter
	// publishes counts the ResourceSlice updates handed to the slice
	// controller, publishBytes their size as the API server stores them
	// (protobuf, every slice of the pool; the controller writes only the
	// slices that changed).
	publishes, publishBytes prometheus.Counter
}

func newMetrics() *metrics {
	return &metrics{
		prepared: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "migpro_dra_prepared_devices_total",
			Help: "Devices the DRA driver prepared for a claim for the first time (repeated Prepares not counted).",
		}),
		notPreferred: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "migpro_dra_prepare_not_preferred_total",
			Help: "Devices prepared at a placement other than migpro's first preference at that moment: the scheduler read a stale ResourceSlice. The instance is made where the scheduler allocated it.",
		}),
		publishes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "migpro_dra_slice_publishes_total",
			Help: "ResourceSlice updates the DRA driver handed to the slice controller: one per change of what the node offers.",
		}),
		publishBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "migpro_dra_slice_publish_bytes_total",
			Help: "Bytes (protobuf) of the ResourceSlice specs published, all slices of the pool per publish.",
		}),
	}
}

// register adds the families to r; families already there (a driver built
// again in the same agent) are shared.
func (m *metrics) register(r prometheus.Registerer) error {
	for _, c := range []*prometheus.Counter{&m.prepared, &m.notPreferred, &m.publishes, &m.publishBytes} {
		err := r.Register(*c)
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if old, ok := are.ExistingCollector.(prometheus.Counter); ok {
				*c = old
				continue
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}
