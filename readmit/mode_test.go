package readmit

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": ModeAdvise, "off": ModeOff, "advise": ModeAdvise, "evict": ModeEvict} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseMode("Evict"); err == nil {
		t.Error("ParseMode accepted Evict")
	}
}

// The default mode is advise: annotation, Event, an advised recommendation
// the webhook does not apply, the counter, and no eviction.
func TestAdviseRecordsAndLeavesThePodRunning(t *testing.T) {
	cs, m := newMarker(t, testPod(true))
	m.mode = DefaultMode
	ctx := context.Background()
	out, err := m.Handle(ctx, testMark())
	if err != nil {
		t.Fatal(err)
	}
	if out.Evicted || !out.Advised || out.Mode != ModeAdvise || out.To != res2g {
		t.Fatalf("outcome %+v", out)
	}
	if n := count(cs, "create", "pods", "eviction"); n != 0 {
		t.Errorf("%d evictions in advise mode", n)
	}
	pod, err := cs.CoreV1().Pods(ns).Get(ctx, testPod(true).Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("pod gone in advise mode: %v", err)
	}
	var a PredictedOOM
	if err := json.Unmarshal([]byte(pod.Annotations[AnnotationPredictedOOM]), &a); err != nil || a.Mode != ModeAdvise || a.To != res2g {
		t.Errorf("annotation %+v %v", a, err)
	}
	if e, ok := events(t, cs)[ReasonPredictedOOM]; !ok || e.Type != corev1.EventTypeWarning {
		t.Errorf("no PredictedOOM event: %+v", e)
	}
	rec := storedRecommendation(t, cs)
	if rec == nil || len(rec.Rules) != 1 || !rec.Rules[0].Advised || rec.Rules[0].To != res2g {
		t.Fatalf("recommendation %+v", rec)
	}
	if to, ok := rec.Target("main", res1g); ok {
		t.Errorf("the webhook would apply an advised rule: %s", to)
	}
	if v := counterValue(t, m.Metrics().Advised); v != 1 {
		t.Errorf("advised counter %v, want 1", v)
	}
	// The run then ran out: counted once; a run that did not run out is not.
	end := RunEnd{PodNamespace: ns, PodName: testPod(true).Name, PodUID: string(podUID), ContainerName: "main", PeakBytes: 5 * gib}
	if _, err := m.RecordEnd(ctx, end); err != nil {
		t.Fatal(err)
	}
	if v := counterValue(t, m.Metrics().AdvisedOOM); v != 0 {
		t.Errorf("advised OOM counter %v after a run that did not run out", v)
	}
	end.RanOut = true
	if _, err := m.RecordEnd(ctx, end); err != nil {
		t.Fatal(err)
	}
	if v := counterValue(t, m.Metrics().AdvisedOOM); v != 1 {
		t.Errorf("advised OOM counter %v, want 1", v)
	}
	// Evict mode later applies the same recommendation.
	m.mode = ModeEvict
	if out, err := m.Handle(ctx, testMark()); err != nil || !out.Evicted {
		t.Fatalf("evict after advise: %+v %v", out, err)
	}
	if to, ok := storedRecommendation(t, cs).Target("main", res1g); !ok || to != res2g {
		t.Errorf("evict mode left the rule advised: %s %v", to, ok)
	}
}

func TestModeOffIgnoresMarks(t *testing.T) {
	cs, m := newMarker(t, testPod(true))
	m.mode = ModeOff
	out, err := m.Handle(context.Background(), testMark())
	if err != nil || out.Ignored == "" || out.Evicted {
		t.Fatalf("outcome %+v %v", out, err)
	}
	for _, a := range cs.Actions() {
		if a.GetVerb() != "get" {
			t.Errorf("mode off wrote: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

// An OOM of a run never advised is not counted.
func TestAdvisedOOMNeedsAnAdvice(t *testing.T) {
	_, m := newMarker(t, testPod(true))
	end := RunEnd{PodNamespace: ns, PodName: testPod(true).Name, PodUID: string(podUID), ContainerName: "main", PeakBytes: 5 * gib, RanOut: true}
	if _, err := m.RecordEnd(context.Background(), end); err != nil {
		t.Fatal(err)
	}
	if v := counterValue(t, m.Metrics().AdvisedOOM); v != 0 {
		t.Errorf("advised OOM counter %v, want 0", v)
	}
}

// A pod's or its namespace's label switches evict on or off only where the
// admin allows labels.
func TestModeLabels(t *testing.T) {
	labelled := func(v string) *corev1.Pod {
		p := testPod(true)
		p.Labels = map[string]string{LabelMode: v}
		return p
	}
	nsWith := func(v string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{LabelMode: v}}}
	}
	cases := []struct {
		name    string
		cluster Mode
		allow   bool
		objs    []runtime.Object
		evicted bool
	}{
		{"pod label evict, allowed", ModeAdvise, true, []runtime.Object{labelled("evict")}, true},
		{"pod label evict, not allowed", ModeAdvise, false, []runtime.Object{labelled("evict")}, false},
		{"namespace label evict, allowed", ModeAdvise, true, []runtime.Object{testPod(true), nsWith("evict")}, true},
		{"pod label advise beats namespace evict", ModeAdvise, true, []runtime.Object{labelled("advise"), nsWith("evict")}, false},
		{"namespace label advise in an evict cluster", ModeEvict, true, []runtime.Object{testPod(true), nsWith("advise")}, false},
		{"no namespace object: the cluster's mode", ModeEvict, true, []runtime.Object{testPod(true)}, true},
		{"a bad label value: the cluster's mode", ModeAdvise, true, []runtime.Object{labelled("always")}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, m := newMarker(t, c.objs...)
			m.mode, m.labelOverride = c.cluster, c.allow
			out, err := m.Handle(context.Background(), testMark())
			if err != nil || out.Evicted != c.evicted {
				t.Fatalf("outcome %+v %v, want evicted %v", out, err, c.evicted)
			}
		})
	}
	// Off stays off whatever the labels say.
	_, m := newMarker(t, labelled("evict"), nsWith("evict"))
	m.mode, m.labelOverride = ModeOff, true
	if out, _ := m.Handle(context.Background(), testMark()); out.Evicted || out.Ignored == "" {
		t.Errorf("mode off with evict labels: %+v", out)
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 {
		t.Fatalf("gather: %v %d", err, len(mfs))
	}
	return mfs[0].GetMetric()[0].GetCounter().GetValue()
}
