package readmit

import (
	"testing"
	"time"

	"github.com/migpro/migpro/predictor"
)

func TestPodHints(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	cases := []struct {
		name    string
		ann     map[string]string
		grace   *int64
		dead    *int64
		want    predictor.Hints
		wantErr bool
	}{
		{name: "defaults", want: predictor.Hints{EvictionTime: 30 + 45}},
		{name: "grace and restart annotation", grace: i64(120), ann: map[string]string{AnnotationRestartSeconds: "300"}, want: predictor.Hints{EvictionTime: 420}},
		{name: "declared duration", ann: map[string]string{AnnotationExpectedDuration: "2h"}, want: predictor.Hints{EvictionTime: 75, Horizon: 7200}},
		{name: "a Job's deadline is no horizon", dead: i64(600), want: predictor.Hints{EvictionTime: 75}},
		{name: "annotation with a deadline", dead: i64(600), ann: map[string]string{AnnotationExpectedDuration: "20m"}, want: predictor.Hints{EvictionTime: 75, Horizon: 1200}},
		{name: "bad restart", ann: map[string]string{AnnotationRestartSeconds: "-3"}, wantErr: true},
		{name: "bad duration", ann: map[string]string{AnnotationExpectedDuration: "soon"}, wantErr: true},
		{name: "zero duration", ann: map[string]string{AnnotationExpectedDuration: "0s"}, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := testPod(true)
			p.Annotations = c.ann
			p.Spec.TerminationGracePeriodSeconds, p.Spec.ActiveDeadlineSeconds = c.grace, c.dead
			h, err := PodHints(p, 45*time.Second)
			if (err != nil) != c.wantErr {
				t.Fatalf("err %v, want error %v", err, c.wantErr)
			}
			if !c.wantErr && h != c.want {
				t.Errorf("hints %+v, want %+v", h, c.want)
			}
		})
	}
}
