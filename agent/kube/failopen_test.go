package kube_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/migpro/migpro/agent/kube"
	"github.com/migpro/migpro/client"
)

// The built hook, run as a runtime runs it on a container whose rootfs is
// read-only, fails open and reports it to the real agent, whose cluster link
// records a TelemetryFailOpen Event on the pod; a pod on another node gets
// none.
func TestFailOpenRecordsAnEventOnThePod(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the hook mounts in a private mount namespace")
	}
	hookBin := filepath.Join(t.TempDir(), "migpro-hook")
	if out, err := exec.Command("go", "build", "-o", hookBin, "github.com/migpro/migpro/cmd/migpro-hook").CombinedOutput(); err != nil {
		t.Fatalf("go build migpro-hook: %v\n%s", err, out)
	}
	const ns = "team"
	pod := func(name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name)},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main"}}}}
	}
	cs := fake.NewClientset(pod("mine", "node-1"), pod("elsewhere", "node-2"))
	e := newEnv(t)
	_, c := e.runLinked(t, cs)
	ctx := context.Background()
	r, err := c.Alloc(ctx, client.AllocRequest{Profile: "1g.5gb"})
	if err != nil {
		t.Fatal(err)
	}

	// A read-only rootfs: the hook cannot make /run/migpro in it.
	rootfs := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", rootfs).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", rootfs).Run() })
	bundle := t.TempDir()
	if err := os.WriteFile(filepath.Join(bundle, "config.json"),
		[]byte(`{"root":{"path":"`+rootfs+`"},"process":{"env":["NVIDIA_VISIBLE_DEVICES=`+r.UUID+`"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctr := exec.Command("unshare", "--mount", "--propagation", "private", "sleep", "60")
	if err := ctr.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctr.Process.Kill(); ctr.Wait() })
	waitFor(t, "the container stand-in", func() bool {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", ctr.Process.Pid))
		return strings.TrimSpace(string(comm)) == "sleep"
	})
	runHook := func(id, podName string) {
		t.Helper()
		h := exec.Command(hookBin, "--agent-socket", e.cfg.Socket)
		h.Stdin = strings.NewReader(fmt.Sprintf(`{"ociVersion":"1.0.2","id":%q,"status":"creating","pid":%d,"bundle":%q,"annotations":{`+
			`"io.kubernetes.cri.sandbox-namespace":%q,"io.kubernetes.cri.sandbox-name":%q,"io.kubernetes.cri.sandbox-uid":%q,"io.kubernetes.cri.container-name":"main"}}`,
			id, ctr.Process.Pid, bundle, ns, podName, "uid-"+podName))
		if out, err := h.CombinedOutput(); err != nil || !strings.Contains(string(out), "without telemetry") {
			t.Fatalf("hook: %v %s, want exit 0 and the fail-open line", err, out)
		}
	}
	failOpenEvents := func() []corev1.Event {
		list, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []corev1.Event
		for _, ev := range list.Items {
			if ev.Reason == kube.ReasonTelemetryFailOpen {
				out = append(out, ev)
			}
		}
		return out
	}

	runHook("ctr-mine", "mine")
	waitFor(t, "the fail-open Event", func() bool { return len(failOpenEvents()) > 0 })
	ev := failOpenEvents()[0]
	if ev.Type != corev1.EventTypeWarning || ev.InvolvedObject.Name != "mine" || ev.InvolvedObject.UID != "uid-mine" ||
		ev.InvolvedObject.FieldPath != "spec.containers{main}" || !strings.Contains(ev.Message, "read-only file system") ||
		ev.Source.Host != "node-1" {
		t.Errorf("event %+v", ev)
	}
	if top, err := c.Top(ctx); err != nil || len(top.Containers) != 0 {
		t.Errorf("registration left behind: %+v %v", top, err)
	}

	// A pod on another node: the agent looks it up and records nothing.
	runHook("ctr-elsewhere", "elsewhere")
	waitFor(t, "the agent to look the pod up", func() bool {
		for _, act := range cs.Actions() {
			if act.GetVerb() == "get" && act.GetResource().Resource == "pods" && act.(interface{ GetName() string }).GetName() == "elsewhere" {
				return true
			}
		}
		return false
	})
	time.Sleep(100 * time.Millisecond)
	if evs := failOpenEvents(); len(evs) != 1 {
		t.Errorf("%d fail-open Events, want only the one on this node's pod: %+v", len(evs), evs)
	}
}
