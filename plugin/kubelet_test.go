package plugin

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/migpro/migpro/defaults"
	"github.com/migpro/migpro/internal/quietlog"
)

// fakeKubelet is a real gRPC Registration server on <dir>/kubelet.sock that
// records every registration. It can refuse the first few.
type fakeKubelet struct {
	v1beta1.UnimplementedRegistrationServer

	srv    *grpc.Server
	regs   chan *v1beta1.RegisterRequest
	mu     sync.Mutex
	refuse int
	all    []*v1beta1.RegisterRequest
}

func startFakeKubelet(t *testing.T, dir string, refuse int) *fakeKubelet {
	t.Helper()
	lis, err := net.Listen("unix", filepath.Join(dir, defaults.KubeletSocketName))
	if err != nil {
		t.Fatal(err)
	}
	k := &fakeKubelet{srv: grpc.NewServer(), regs: make(chan *v1beta1.RegisterRequest, 64), refuse: refuse}
	v1beta1.RegisterRegistrationServer(k.srv, k)
	go func() { _ = k.srv.Serve(lis) }()
	t.Cleanup(k.srv.Stop)
	return k
}

func (k *fakeKubelet) Register(_ context.Context, r *v1beta1.RegisterRequest) (*v1beta1.Empty, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.all = append(k.all, r)
	if k.refuse > 0 {
		k.refuse--
		return nil, status.Error(codes.Unavailable, "kubelet not ready")
	}
	k.regs <- r
	return &v1beta1.Empty{}, nil
}

func (k *fakeKubelet) attempts() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.all)
}

// nextRegistration waits for an accepted registration.
func (k *fakeKubelet) nextRegistration(t *testing.T) *v1beta1.RegisterRequest {
	t.Helper()
	select {
	case r := <-k.regs:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no registration within 10s")
		return nil
	}
}

// waitRegistered waits until every named resource has been registered.
func (k *fakeKubelet) waitRegistered(t *testing.T, resources ...string) {
	t.Helper()
	missing := map[string]bool{}
	for _, r := range resources {
		missing[r] = true
	}
	for len(missing) > 0 {
		delete(missing, k.nextRegistration(t).ResourceName)
	}
}

// dialPlugin connects to a plugin socket the way the kubelet does.
func dialPlugin(t *testing.T, socket string) v1beta1.DevicePluginClient {
	return dialPluginB(t, socket)
}

func dialPluginB(t testing.TB, socket string) v1beta1.DevicePluginClient {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return v1beta1.NewDevicePluginClient(conn)
}

// startManager runs a Manager over inv in dir until the test ends. stop ends
// it and returns Run's error; it may be called more than once.
func startManager(t *testing.T, dir string, inv Inventory, opts ...Option) (m *Manager, stop func() error) {
	t.Helper()
	quiet := quietlog.New()
	opts = append([]Option{WithPluginDir(dir), WithLogger(quiet), WithRegisterBackoff(10*time.Millisecond, 100*time.Millisecond)}, opts...)
	m, err := NewManager(inv, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var runErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		runErr = m.Run(ctx)
	}()
	stop = func() error {
		cancel()
		<-done
		return runErr
	}
	t.Cleanup(func() { _ = stop() })
	return m, stop
}

// eventually polls cond until it holds or 10s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// shortDir is a temp dir with a short path: unix socket paths are limited to
// 108 bytes, and t.TempDir() paths can be long.
func shortDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	if len(d) < 80 {
		return d
	}
	t.Skipf("temp dir path too long for unix sockets: %s", d)
	return ""
}
