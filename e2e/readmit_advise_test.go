//go:build e2e

package e2e

// Readmission in advise mode, the default, against a real API server: a mark
// gives the Event, the annotation, the advised recommendation and the
// metrics, and the pod keeps running. A run that then ran out is counted.

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/migpro/migpro/e2e/harness"
	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/readmit"
)

func TestReadmitAdvise(t *testing.T) {
	cl := harness.StartCluster(t)
	ctx := context.Background()
	st := startReadmitStack(t, cl)
	createTrainer(t, cl, readmitNode, false)
	mustCreate(t, func() error {
		_, err := cl.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: readmitNode}}, metav1.CreateOptions{})
		return err
	})
	old := reportRunning(t, cl.Client, st.firstPod(t, cl))

	marker := st.marker(t, readmitNode, readmit.WithMode(readmit.ModeAdvise))
	reg := prometheus.NewRegistry()
	reg.MustRegister(marker.Collectors()...)
	mark := predictor.Mark{Reason: predictor.ReasonTimeToOOM, Forecast: 7 << 30, Profile: "2g.10gb", Fits: true,
		ContainerID: "c1", PodNamespace: old.Namespace, PodName: old.Name, PodUID: string(old.UID), ContainerName: "main",
		InstanceUUID: "MIG-e2e", InstanceProfile: "1g.5gb"}
	out, err := marker.Handle(ctx, mark)
	if err != nil || !out.Advised || out.Evicted || out.Mode != readmit.ModeAdvise {
		t.Fatalf("advise: %+v %v", out, err)
	}

	// The annotation, the Event and the counter.
	pod, err := cl.Client.CoreV1().Pods(readmitNS).Get(ctx, old.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the pod is gone in advise mode: %v", err)
	}
	var a readmit.PredictedOOM
	if err := json.Unmarshal([]byte(pod.Annotations[readmit.AnnotationPredictedOOM]), &a); err != nil ||
		a.Mode != readmit.ModeAdvise || a.To != res2g10 || a.From != res1g5 {
		t.Errorf("annotation %q: %+v %v", pod.Annotations[readmit.AnnotationPredictedOOM], a, err)
	}
	if msg := podEvents(t, cl.Client, old.Name)[readmit.ReasonPredictedOOM]; !strings.Contains(msg, "advise mode") || !strings.Contains(msg, res2g10) {
		t.Errorf("PredictedOOM event %q", msg)
	}
	if v := familyValue(t, reg, "migpro_readmit_advised_total"); v != 1 {
		t.Errorf("migpro_readmit_advised_total %v, want 1", v)
	}

	// The recommendation is kept, advised: the webhook does not apply it.
	cm, err := cl.Client.CoreV1().ConfigMaps(readmitNS).Get(ctx, readmit.StoreName("Deployment", "trainer"), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("recommendation: %v", err)
	}
	var rec readmit.Recommendation
	if err := json.Unmarshal([]byte(cm.Data[readmit.RecommendationKey]), &rec); err != nil || len(rec.Rules) != 1 || !rec.Rules[0].Advised {
		t.Fatalf("recommendation %s: %+v %v", cm.Data[readmit.RecommendationKey], rec, err)
	}
	if _, ok := rec.Target("main", res1g5); ok {
		t.Error("an advised rule would be applied by the webhook")
	}

	// The pod keeps running: not evicted, not deleted, not replaced.
	time.Sleep(3 * time.Second)
	pod, err = cl.Client.CoreV1().Pods(readmitNS).Get(ctx, old.Name, metav1.GetOptions{})
	if err != nil || pod.DeletionTimestamp != nil || pod.UID != old.UID || pod.Status.Phase != corev1.PodRunning {
		t.Fatalf("pod after advise: %v %+v", err, pod.Status)
	}
	if evs := podEvents(t, cl.Client, old.Name); evs[readmit.ReasonEvicted] != "" {
		t.Errorf("evicted in advise mode: %v", evs)
	}
	pods, err := cl.Client.CoreV1().Pods(readmitNS).List(ctx, metav1.ListOptions{LabelSelector: "app=trainer"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("trainer pods: %v %d, want the one", err, len(pods.Items))
	}

	// The run ends out of memory: counted once, as evidence for evict mode.
	end := readmit.RunEnd{PodNamespace: old.Namespace, PodName: old.Name, PodUID: string(old.UID), ContainerName: "main",
		PeakBytes: 5 << 30, RanOut: true}
	if _, err := marker.RecordEnd(ctx, end); err != nil {
		t.Fatal(err)
	}
	if v := familyValue(t, reg, "migpro_readmit_advised_oom_total"); v != 1 {
		t.Errorf("migpro_readmit_advised_oom_total %v, want 1", v)
	}
}

// familyValue is a counter family's value in reg.
func familyValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
