package kube_test

import (
	"bytes"
	"errors"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/migpro/migpro/agent"
	"github.com/migpro/migpro/agent/kube"
)

// errUnreachable is what client-go returns when the network to the API
// server is gone.
var errUnreachable = &url.Error{Op: "Get", URL: "https://10.96.0.1:443/api/v1/nodes/node-1",
	Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: network is unreachable")}}

// TestReadyFollowsTheAPIServer: the agent is not ready while the API server
// does not answer, and ready again once it does; a refusal (forbidden) is
// an answer.
func TestReadyFollowsTheAPIServer(t *testing.T) {
	defer kube.SetReachEvery(10 * time.Millisecond)()
	var down atomic.Pointer[error]
	set := func(err error) { down.Store(&err) }
	set(nil)
	cs := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}})
	cs.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, runtimeObject, error) {
		if err := *down.Load(); err != nil {
			return true, nil, err
		}
		return false, nil, nil
	})
	e := newEnv(t)
	a, _ := e.runLinked(t, cs)
	waitFor(t, "ready", func() bool { return a.Ready() == nil })
	set(errUnreachable)
	waitFor(t, "not ready while the API server is unreachable", func() bool {
		err := a.Ready()
		return err != nil && strings.Contains(err.Error(), "API server") && strings.Contains(err.Error(), "network is unreachable")
	})
	set(errForbidden)
	waitFor(t, "ready when the API server answers, even with a refusal", func() bool { return a.Ready() == nil })
}

// TestNetworkErrorIsNotBlamedOnRBAC: a node that cannot be read because the
// network is down is logged as such, not as missing RBAC.
func TestNetworkErrorIsNotBlamedOnRBAC(t *testing.T) {
	for _, c := range []struct {
		err       error
		want, not string
	}{
		{errUnreachable, "cannot reach the API server", "get and patch"},
		{errForbidden, "get and patch on nodes", "cannot reach"},
	} {
		cs := fake.NewClientset()
		cs.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, runtimeObject, error) { return true, nil, c.err })
		e := newEnv(t)
		log := &syncBuffer{}
		l := logrus.New()
		l.SetOutput(log)
		if _, err := kube.New(kube.WithClientset(cs))(t.Context(), e.open(t, agent.WithLogger(l))); err != nil {
			t.Fatal(err)
		}
		if out := log.String(); !strings.Contains(out, c.want) || strings.Contains(out, c.not) {
			t.Errorf("%v logged:\n%s\nwant %q, not %q", c.err, out, c.want, c.not)
		}
	}
}

// TestRefusesBesideNVIDIAsSingleStrategy: NVIDIA's device plugin with the
// single MIG strategy advertises MIG instances as nvidia.com/gpu; the agent
// refuses to start beside it, as beside the mixed strategy.
func TestRefusesBesideNVIDIAsSingleStrategy(t *testing.T) {
	for name, node := range map[string]*corev1.Node{
		"strategy label": {ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"nvidia.com/mig.strategy": "single"}}},
		"product label": {ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"}},
			Status: corev1.NodeStatus{Capacity: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("7")}}},
	} {
		e := newEnv(t)
		_, err := kube.New(kube.WithClientset(fake.NewClientset(node)))(t.Context(), e.open(t))
		if err == nil || !strings.Contains(err.Error(), "another device plugin") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want a one-line refusal", name, err)
		}
	}
	// NVIDIA's plugin on GPUs with MIG off (strategy none) is no conflict.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"nvidia.com/mig.strategy": "none"}},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}
	e := newEnv(t)
	if _, err := kube.New(kube.WithClientset(fake.NewClientset(node)))(t.Context(), e.open(t)); err != nil {
		t.Errorf("beside NVIDIA's plugin with strategy none: %v", err)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
