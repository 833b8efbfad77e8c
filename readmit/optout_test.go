package readmit

import (
	"context"
	"strings"
	"testing"
)

// A pod labelled migpro.dev/readmit=disabled is annotated and its
// recommendation recorded, but it is never evicted, and an Event says why.
func TestMarkerHonoursTheOptOutLabel(t *testing.T) {
	pod := testPod(true)
	pod.Labels = map[string]string{LabelReadmit: ReadmitDisabled}
	cs, m := newMarker(t, pod)
	out, err := m.Handle(context.Background(), testMark())
	if err != nil {
		t.Fatal(err)
	}
	if out.Evicted || count(cs, "create", "pods", "eviction") != 0 {
		t.Fatalf("evicted an opted-out pod: %+v", out)
	}
	if !strings.Contains(out.Ignored, "migpro.dev/readmit=disabled") {
		t.Errorf("ignored %q, want the label named", out.Ignored)
	}
	ev := events(t, cs)[ReasonNotEvicted]
	if !strings.Contains(ev.Message, "migpro.dev/readmit=disabled") || !strings.Contains(ev.Message, res2g) {
		t.Errorf("ReadmitNotEvicted event %q, want the label and the recommendation", ev.Message)
	}
	if _, ok := events(t, cs)[ReasonEvicted]; ok {
		t.Error("a ReadmitEvicted event for a pod not evicted")
	}
	if count(cs, "patch", "pods", "") != 1 {
		t.Error("the pod was not annotated")
	}
	if rec := storedRecommendation(t, cs); rec == nil {
		t.Error("no recommendation recorded")
	} else if to, ok := rec.Target("main", res1g); !ok || to != res2g {
		t.Errorf("recommendation %+v", rec)
	}
}
