package plugintest

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/migpro/migpro/defaults"
)

// Kubelet is a real gRPC Registration server on <dir>/kubelet.sock that
// records every registration. It can refuse the first few, as a kubelet
// that is not ready yet.
type Kubelet struct {
	v1beta1.UnimplementedRegistrationServer

	srv    *grpc.Server
	lis    net.Listener
	regs   chan *v1beta1.RegisterRequest
	mu     sync.Mutex
	refuse int
	all    []*v1beta1.RegisterRequest
}

// StartKubelet serves in dir until tb ends, refusing the first refuse
// registrations with Unavailable.
func StartKubelet(tb testing.TB, dir string, refuse int) *Kubelet {
	tb.Helper()
	k := ListenKubelet(tb, dir, refuse)
	k.Serve()
	return k
}

// ListenKubelet is a kubelet that is there but has not answered yet: its
// socket exists and nothing is served until Serve.
func ListenKubelet(tb testing.TB, dir string, refuse int) *Kubelet {
	tb.Helper()
	lis, err := net.Listen("unix", filepath.Join(dir, defaults.KubeletSocketName))
	if err != nil {
		tb.Fatal(err)
	}
	k := &Kubelet{srv: grpc.NewServer(), lis: lis, regs: make(chan *v1beta1.RegisterRequest, 64), refuse: refuse}
	v1beta1.RegisterRegistrationServer(k.srv, k)
	tb.Cleanup(func() { k.srv.Stop(); _ = lis.Close() })
	return k
}

// Serve starts answering.
func (k *Kubelet) Serve() { go func() { _ = k.srv.Serve(k.lis) }() }

// Register records r and accepts it, unless it is one of those to refuse.
func (k *Kubelet) Register(_ context.Context, r *v1beta1.RegisterRequest) (*v1beta1.Empty, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.all = append(k.all, r)
	if k.refuse > 0 {
		k.refuse--
		return nil, status.Error(codes.Unavailable, "kubelet not ready")
	}
	select {
	case k.regs <- r:
	default: // nobody reads them (a benchmark): keep the count only
	}
	return &v1beta1.Empty{}, nil
}

// Attempts counts the registrations tried, refused ones included.
func (k *Kubelet) Attempts() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.all)
}

// Stop stops serving, as a kubelet that goes away.
func (k *Kubelet) Stop() { k.srv.Stop() }

// Next waits up to 10 s for the next accepted registration.
func (k *Kubelet) Next(tb testing.TB) *v1beta1.RegisterRequest {
	tb.Helper()
	select {
	case r := <-k.regs:
		return r
	case <-time.After(10 * time.Second):
		tb.Fatal("no registration within 10s")
		return nil
	}
}

// WaitRegistered waits until every named resource has registered.
func (k *Kubelet) WaitRegistered(tb testing.TB, resources ...string) {
	tb.Helper()
	missing := map[string]bool{}
	for _, r := range resources {
		missing[r] = true
	}
	for len(missing) > 0 {
		delete(missing, k.Next(tb).ResourceName)
	}
}
