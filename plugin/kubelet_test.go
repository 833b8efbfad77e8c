package plugin

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/migpro/migpro/internal/quietlog"
)

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
