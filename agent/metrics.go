package agent

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the agent's own Prometheus families. The registry they live
// in is the agent's (WithRegistry, or one of its own) and is what
// --metrics-addr serves; the telemetry service registers its families there
// too.
type metrics struct {
	nvmlOps      *prometheus.CounterVec
	nvmlSeconds  *prometheus.HistogramVec
	demand       *prometheus.CounterVec
	allocate     *prometheus.HistogramVec
	marks        prometheus.Counter
	readmissions *prometheus.CounterVec
}

func newMetrics() *metrics {
	return &metrics{
		nvmlOps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "migpro_nvml_operations_total",
			Help: "MIG changes asked of NVML, by operation (create_gpu_instance, create_compute_instance, destroy_compute_instance, destroy_gpu_instance) and result (ok, error).",
		}, []string{"operation", "result"}),
		nvmlSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "migpro_nvml_operation_duration_seconds",
			Help:    "How long each MIG change took in NVML, by operation.",
			Buckets: []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"operation"}),
		demand: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "migpro_demand_provisions_total",
			Help: "Instances asked for pending pods, by profile and result: served (made), waiting (no room yet), failed.",
		}, []string{"profile", "result"}),
		allocate: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "migpro_kubelet_allocate_duration_seconds",
			Help:    "How long the device plugins took to answer the kubelet's Allocate, by resource and result.",
			Buckets: []float64{.0005, .001, .005, .01, .05, .1, .5, 1, 5},
		}, []string{"resource", "result"}),
		marks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "migpro_predictor_marks_total",
			Help: "Containers the memory predictor marked for readmission on a larger profile.",
		}),
		readmissions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "migpro_readmissions_total",
			Help: "Readmissions of marked pods through the API server, by result: evicted, advised (advise mode: recorded, not evicted), recorded (recommendation stored, pod not evicted), ignored, failed.",
		}, []string{"result"}),
	}
}

func (m *metrics) register(r prometheus.Registerer, a *Agent) error {
	for _, c := range []prometheus.Collector{m.nvmlOps, m.nvmlSeconds, m.demand, m.allocate, m.marks, m.readmissions, &instancesCollector{a: a}, waitingCollector{a}} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

func resultOf(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}

func (m *metrics) observeNVML(op string, start time.Time, err error) {
	m.nvmlOps.WithLabelValues(op, resultOf(err)).Inc()
	m.nvmlSeconds.WithLabelValues(op).Observe(time.Since(start).Seconds())
}

func (m *metrics) observeAllocate(resource string, took time.Duration, err error) {
	m.allocate.WithLabelValues(resource, resultOf(err)).Observe(took.Seconds())
}

// CountReadmission records one readmission's outcome (evicted, recorded,
// ignored, failed); the cluster link calls it.
func (a *Agent) CountReadmission(result string) { a.metrics.readmissions.WithLabelValues(result).Inc() }

// Registry is the agent's Prometheus registry, served on --metrics-addr.
func (a *Agent) Registry() *prometheus.Registry { return a.registry }

// WithRegistry makes the agent register its metrics in r. Without it the
// agent makes its own, with the Go runtime and process collectors.
func WithRegistry(r *prometheus.Registry) Option { return func(a *Agent) { a.registry = r } }

// instancesCollector reports the instances by GPU, profile and state at
// scrape time, from the partitioner's own records, so the gauge can never
// drift from what the agent serves. A (GPU, profile, state) appears once an
// instance has been in it, and then stays, at zero when none is: a node
// reports the few profiles it uses, not every profile times every state
// (3 GPUs x 13 profiles x 3 states were 117 series, nearly all zero).
type instancesCollector struct {
	a    *Agent
	mu   sync.Mutex
	seen map[instanceKey]bool
}

type instanceKey struct {
	gpu            int
	profile, state string
}

var instancesDesc = prometheus.NewDesc("migpro_instances",
	"MIG instances by GPU, profile and state (idle, in-use, unhealthy, creating, destroying); a combination appears once an instance has been in it.",
	[]string{"gpu", "profile", "state"}, nil)

func (*instancesCollector) Describe(ch chan<- *prometheus.Desc) { ch <- instancesDesc }

func (c *instancesCollector) Collect(ch chan<- prometheus.Metric) {
	counts := map[instanceKey]int{}
	insts := c.a.part.Instances()
	c.a.mu.Lock()
	for _, in := range insts {
		state := string(in.State)
		if !c.a.healthyLocked(in) {
			state = "unhealthy"
		}
		counts[instanceKey{in.GPU, in.Profile, state}]++
	}
	c.a.mu.Unlock()
	c.mu.Lock()
	if c.seen == nil {
		c.seen = map[instanceKey]bool{}
	}
	for k := range counts {
		c.seen[k] = true
	}
	for k := range c.seen {
		counts[k] += 0
	}
	c.mu.Unlock()
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(instancesDesc, prometheus.GaugeValue, float64(n), strconv.Itoa(k.gpu), k.profile, k.state)
	}
}

// waitingCollector reports the demand waiting now, by profile: pending pods
// the cluster demand source saw and local callers told to wait. It reads the
// same snapshot the partitioner is fed, at scrape time.
type waitingCollector struct{ a *Agent }

var waitingDesc = prometheus.NewDesc("migpro_demand_waiting",
	"Requests waiting for an instance now, by profile (pending pods and local callers told to wait).",
	[]string{"profile"}, nil)

func (waitingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- waitingDesc }

func (c waitingCollector) Collect(ch chan<- prometheus.Metric) {
	waiting := c.a.PendingDemand()
	for _, p := range c.a.part.Profiles() {
		ch <- prometheus.MustNewConstMetric(waitingDesc, prometheus.GaugeValue, float64(waiting[p]), p)
	}
}
