package agent

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// containerMemoryCollector reports each running container's GPU memory at
// scrape time, from telemetry's own records (migctl top reads the same):
// one series per container and figure, gone when the container ends.
type containerMemoryCollector struct{ w *watch }

var containerLabels = []string{"namespace", "pod", "container", "container_id", "mig_uuid"}

var (
	containerUsedDesc = prometheus.NewDesc("migpro_container_memory_used_bytes",
		"GPU memory a container holds now: the larger of the shim's live allocations and NVML's use of its instance.", containerLabels, nil)
	containerPeakDesc = prometheus.NewDesc("migpro_container_memory_peak_bytes",
		"Highest GPU memory a container has held since it started.", containerLabels, nil)
	containerCapacityDesc = prometheus.NewDesc("migpro_container_memory_capacity_bytes",
		"Memory of the MIG instance a container runs on.", containerLabels, nil)
)

func (containerMemoryCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- containerUsedDesc
	ch <- containerPeakDesc
	ch <- containerCapacityDesc
}

func (c containerMemoryCollector) Collect(ch chan<- prometheus.Metric) {
	for _, e := range c.w.svc.Top().Containers {
		id := e.ID
		if len(id) > 12 {
			id = id[:12]
		}
		labels := []string{e.PodNamespace, e.PodName, e.ContainerName, id, strings.Join(e.MIGUUIDs, ",")}
		ch <- prometheus.MustNewConstMetric(containerUsedDesc, prometheus.GaugeValue, float64(max(e.ShimBytes, e.NVMLBytes)), labels...)
		ch <- prometheus.MustNewConstMetric(containerPeakDesc, prometheus.GaugeValue, float64(e.PeakBytes), labels...)
		if e.CapacityBytes > 0 {
			ch <- prometheus.MustNewConstMetric(containerCapacityDesc, prometheus.GaugeValue, float64(e.CapacityBytes), labels...)
		}
	}
}
