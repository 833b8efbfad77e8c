//go:build e2e

package e2e

// Readmission of a Job's pod against a real control plane: the real Job
// controller must not count the eviction against the Job's backoffLimit.

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/migpro/migpro/e2e/harness"
	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/readmit"
)

// TestReadmitJob marks a pod of each of two Jobs with backoffLimit 0. The
// Job whose podFailurePolicy ignores DisruptionTarget has its pod evicted;
// the Job controller neither counts the failure nor fails the Job, and its
// next pod asks for the recommended profile. The Job without that policy
// keeps its pod: evicting it would count against its backoffLimit (here,
// fail the Job), which readmission never does, and an Event says so.
func TestReadmitJob(t *testing.T) {
	cl := harness.StartCluster(t)
	ctx := context.Background()
	st := startReadmitStack(t, cl)
	mustCreate(t, func() error {
		_, err := cl.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: readmitNS}}, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := cl.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: readmitNode}}, metav1.CreateOptions{})
		return err
	})
	createJob(t, cl, "guarded", true)
	createJob(t, cl, "plain", false)
	marker := st.marker(t, readmitNode)

	// The guarded Job: evicted, not counted, replaced on the larger profile.
	old := reportRunning(t, cl.Client, waitJobPod(t, cl, "guarded", ""))
	out, err := marker.Handle(ctx, jobMark(old))
	if err != nil || !out.Evicted || out.Controller.Kind != "Job" {
		t.Fatalf("guarded Job: %+v %v", out, err)
	}
	finishEvicted(t, cl, old)
	next := waitJobPod(t, cl, "guarded", old.UID)
	if q := next.Spec.Containers[0].Resources.Limits[res2g10]; q.String() != "1" {
		t.Errorf("the Job's next pod asks for %v, want %s", next.Spec.Containers[0].Resources.Limits, res2g10)
	}
	job, err := cl.Client.BatchV1().Jobs(readmitNS).Get(ctx, "guarded", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if job.Status.Failed != 0 || jobFailed(job) {
		t.Errorf("guarded Job: failed %d, conditions %+v: the eviction was counted", job.Status.Failed, job.Status.Conditions)
	}

	// The plain Job: not evicted, and told why.
	plain := reportRunning(t, cl.Client, waitJobPod(t, cl, "plain", ""))
	out, err = marker.Handle(ctx, jobMark(plain))
	if err != nil || out.Evicted || !strings.Contains(out.Ignored, "would count against Job plain's backoffLimit") {
		t.Fatalf("plain Job: %+v %v", out, err)
	}
	if m := podEvents(t, cl.Client, plain.Name)[readmit.ReasonNotEvicted]; !strings.Contains(m, "backoffLimit") {
		t.Errorf("ReadmitNotEvicted event %q", m)
	}
	cur, err := cl.Client.CoreV1().Pods(readmitNS).Get(ctx, plain.Name, metav1.GetOptions{})
	if err != nil || cur.DeletionTimestamp != nil {
		t.Fatalf("the plain Job's pod must keep running: %v %v", err, cur.DeletionTimestamp)
	}
}

func jobMark(p *corev1.Pod) predictor.Mark {
	return predictor.Mark{PodNamespace: p.Namespace, PodName: p.Name, PodUID: string(p.UID), ContainerName: "main",
		InstanceProfile: "1g.5gb", Profile: "2g.10gb", Forecast: 7 << 30, Reason: predictor.ReasonTimeToOOM, Fits: true}
}

// createJob creates a Job of one pod on readmitNode asking for 1g.5gb, with
// backoffLimit 0; guarded adds the podFailurePolicy docs/readmit.md gives.
func createJob(t *testing.T, cl *harness.Cluster, name string, guarded bool) {
	t.Helper()
	zero, grace, no := int32(0), int64(1), false
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: readmitNS},
		Spec: batchv1.JobSpec{BackoffLimit: &zero, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			NodeName: readmitNode, RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken: &no,
			Containers: []corev1.Container{{Name: "main", Image: harness.BusyboxImageName, ImagePullPolicy: corev1.PullNever,
				Command:   []string{"sleep", "3600"},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{res1g5: resource.MustParse("1")}}}},
		}}}}
	if guarded {
		j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
			Action:          batchv1.PodFailurePolicyActionIgnore,
			OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
		}}}
	}
	mustCreate(t, func() error {
		_, err := cl.Client.BatchV1().Jobs(readmitNS).Create(context.Background(), j, metav1.CreateOptions{})
		return err
	})
}

// waitJobPod waits for a live pod of the Job other than not.
func waitJobPod(t *testing.T, cl *harness.Cluster, job string, not types.UID) *corev1.Pod {
	t.Helper()
	var found *corev1.Pod
	eventually(t, "a pod of Job "+job, 60*time.Second, func() bool {
		list, err := cl.Client.CoreV1().Pods(readmitNS).List(context.Background(), metav1.ListOptions{LabelSelector: "job-name=" + job})
		if err != nil {
			return false
		}
		for i := range list.Items {
			p := &list.Items[i]
			if p.UID != not && p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodFailed {
				found = p
				return true
			}
		}
		return false
	})
	return found
}

// finishEvicted does what the kubelet does for an evicted pod: it stops the
// containers, reports the pod Failed (the API server already added the
// DisruptionTarget condition) and confirms the deletion.
func finishEvicted(t *testing.T, cl *harness.Cluster, old *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	p, err := cl.Client.CoreV1().Pods(readmitNS).Get(ctx, old.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the evicted pod: %v", err)
	}
	disrupted := false
	for _, c := range p.Status.Conditions {
		disrupted = disrupted || (c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue)
	}
	if !disrupted || p.DeletionTimestamp == nil {
		t.Fatalf("evicted pod: deletion %v, conditions %+v: want terminating with DisruptionTarget", p.DeletionTimestamp, p.Status.Conditions)
	}
	// The job controller writes the pod too (its tracking finalizer), so
	// the status is written again from the latest version on a conflict.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := cl.Client.CoreV1().Pods(readmitNS).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status.Phase = corev1.PodFailed
		_, err = cl.Client.CoreV1().Pods(readmitNS).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("report the evicted pod Failed: %v", err)
	}
	zero := int64(0)
	if err := cl.Client.CoreV1().Pods(readmitNS).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatalf("confirm the deletion: %v", err)
	}
}

func jobFailed(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobFailed || c.Type == batchv1.JobFailureTarget) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
