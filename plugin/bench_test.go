package plugin

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/migpro/migpro/internal/quietlog"
)

// benchService is a service over n healthy devices, as on a node with
// n instances of one profile.
func benchService(b *testing.B, n int) (*service, []string) {
	b.Helper()
	inv := newFakeInventory("1g.5gb")
	var ids []string
	for i := range n {
		id := fmt.Sprintf("MIG-%08x-1111-2222-3333-444444444444", i)
		inv.Put("1g.5gb", dev(id, true))
		ids = append(ids, id)
	}
	log := quietlog.New()
	return &service{profile: "1g.5gb", resource: "nvidia.com/mig-1g.5gb", inv: inv, changed: newNotifier(),
		check: func(context.Context, string, []string) error { return nil }, prefer: DefaultPreference, log: log}, ids
}

// BenchmarkAllocate is the plugin's own time in Allocate (no gRPC): the
// inventory lookup, the checks, the agent callback and the response, for one
// container asking for one of 56 instances (8 GPUs × 7).
func BenchmarkAllocate(b *testing.B) {
	s, ids := benchService(b, 56)
	req := &v1beta1.AllocateRequest{ContainerRequests: []*v1beta1.ContainerAllocateRequest{{DevicesIds: []string{ids[40]}}}}
	ctx := context.Background()
	for b.Loop() {
		if _, err := s.Allocate(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAllocateGRPC is Allocate as the kubelet sees it: over the unix
// socket, with a registered plugin.
func BenchmarkAllocateGRPC(b *testing.B) {
	dir := b.TempDir()
	inv := newFakeInventory("1g.5gb")
	inv.Put("1g.5gb", dev(uuidA, true))
	log := quietlog.New()
	cfg := defaultConfig()
	cfg.dir, cfg.log = dir, log
	srv := newServer("1g.5gb", inv, newNotifier(), &cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := srv.start(ctx); err != nil { // registration keeps retrying: no kubelet here
		b.Fatal(err)
	}
	defer srv.stop()
	c := dialPluginB(b, srv.socket)
	req := &v1beta1.AllocateRequest{ContainerRequests: []*v1beta1.ContainerAllocateRequest{{DevicesIds: []string{uuidA}}}}
	for b.Loop() {
		if _, err := c.Allocate(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListAndWatchList is the cost of building one device list.
func BenchmarkListAndWatchList(b *testing.B) {
	s, _ := benchService(b, 56)
	for b.Loop() {
		if len(s.kubeletDevices()) != 56 {
			b.Fatal("wrong list")
		}
	}
}

// BenchmarkAdvertise is the plugin's share of "demand to advertised": from
// the inventory signalling a new instance to the kubelet receiving the new
// ListAndWatch list over the unix socket.
func BenchmarkAdvertise(b *testing.B) {
	dir := b.TempDir()
	inv := newFakeInventory("1g.5gb")
	log := quietlog.New()
	m, err := NewManager(inv, WithPluginDir(dir), WithLogger(log))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	sock := dir + "/" + SocketName("1g.5gb")
	var stream interface {
		Recv() (*v1beta1.ListAndWatchResponse, error)
	}
	for stream == nil { // wait for the server
		s, err := dialPluginB(b, sock).ListAndWatch(ctx, &v1beta1.Empty{})
		if err == nil {
			if _, err = s.Recv(); err == nil {
				stream = s
			}
		}
	}
	n := 0
	for b.Loop() {
		id := fmt.Sprintf("MIG-%08x-1111-2222-3333-444444444444", n%2)
		if n%2 == 0 {
			inv.Put("1g.5gb", dev(id, true))
		} else {
			inv.Delete("1g.5gb", fmt.Sprintf("MIG-%08x-1111-2222-3333-444444444444", 0))
		}
		n++
		if _, err := stream.Recv(); err != nil {
			b.Fatal(err)
		}
	}
}
