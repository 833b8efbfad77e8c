package agent

import (
	"context"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/internal/quietlog"
	"github.com/migpro/migpro/plugin"
	"github.com/migpro/migpro/plugin/plugintest"
)

// pluginClient runs the agent's device plugins against a stand-in kubelet
// and returns a client of the profile's plugin, as the kubelet would dial it.
func pluginClient(b testing.TB, a *Agent, profile string) v1beta1.DevicePluginClient {
	dir := b.TempDir()
	plugintest.StartKubelet(b, dir, 0)
	mgr, err := plugin.NewManager(a.inv, plugin.WithPluginDir(dir), plugin.WithAllocateCheck(a.allocateCheck), plugin.WithPreference(a.prefer), plugin.WithLogger(quietlog.New()))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { mgr.Run(ctx); close(done) }()
	b.Cleanup(func() { cancel(); <-done })
	sock := filepath.Join(dir, plugin.SocketName(profile))
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	c := v1beta1.NewDevicePluginClient(conn)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := c.GetDevicePluginOptions(context.Background(), &v1beta1.Empty{}); err == nil {
			return c
		}
		if time.Now().After(deadline) {
			b.Fatal("plugin did not come up")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkKubeletAllocate is the kubelet's Allocate call on the agent's real
// plugin over gRPC: the agent checks the device, marks it in use and
// checkpoints (fsync) before answering. Each iteration releases it again.
func BenchmarkKubeletAllocate(b *testing.B) {
	e := newEnv(b, "a100-40gb")
	e.cfg.TelemetryDir = TelemetryOff
	a, err := New(e.cfg, GPU{Node: e.node}, WithLogger(quietlog.New()))
	if err == nil {
		err = a.Open(context.Background())
	}
	if err != nil {
		b.Fatal(err)
	}
	resp, err := a.Alloc(context.Background(), client.AllocRequest{Profile: "1g.5gb"})
	if err != nil {
		b.Fatal(err)
	}
	a.part.Release(resp.UUID)
	c := pluginClient(b, a, "1g.5gb")
	req := &v1beta1.AllocateRequest{ContainerRequests: []*v1beta1.ContainerAllocateRequest{{DevicesIds: []string{resp.UUID}}}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Allocate(context.Background(), req); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		a.part.Release(resp.UUID)
		b.StartTimer()
	}
}

// BenchmarkDemandToAdvertised is the time from a demand (a local alloc) to
// the new instance's appearance in the plugin's ListAndWatch stream, with
// the simulated NVML at zero latency so only migpro's own work counts: the
// decision, the CDI spec write, the checkpoint and the plugin push. It
// reports p50 and p99 in microseconds.
func BenchmarkDemandToAdvertised(b *testing.B) {
	e := newEnv(b, "a100-40gb")
	e.cfg.TelemetryDir = TelemetryOff
	a, err := New(e.cfg, GPU{Node: e.node}, WithLogger(quietlog.New()))
	if err == nil {
		err = a.Open(context.Background())
	}
	if err != nil {
		b.Fatal(err)
	}
	c := pluginClient(b, a, "1g.5gb")
	stream, err := c.ListAndWatch(context.Background(), &v1beta1.Empty{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil { // the initial, empty list
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		resp, err := a.Alloc(context.Background(), client.AllocRequest{Profile: "1g.5gb"})
		if err != nil {
			b.Fatal(err)
		}
		for seen := false; !seen; {
			m, err := stream.Recv()
			if err != nil {
				b.Fatal(err)
			}
			for _, d := range m.Devices {
				seen = seen || d.ID == resp.UUID
			}
		}
		lat = append(lat, time.Since(start))
		b.StopTimer()
		if err := a.Free(context.Background(), resp.UUID); err != nil {
			b.Fatal(err)
		}
		for gone := false; !gone; { // drain until the list is empty again
			m, err := stream.Recv()
			if err != nil {
				b.Fatal(err)
			}
			gone = len(m.Devices) == 0
		}
		b.StartTimer()
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
