package agent

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/partitioner"
	"github.com/migpro/migpro/plugin"
	"github.com/migpro/migpro/plugin/plugintest"
)

// get fetches a path of the agent's metrics endpoint.
func get(t *testing.T, a *Agent, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + a.MetricsAddr() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// sample reads one sample's value from a Prometheus text exposition: name
// is the family (with suffix) and labels a regexp over its label set.
func sample(t *testing.T, body, name, labels string) float64 {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\{` + labels + `\} (\S+)$`)
	m := re.FindStringSubmatch(body)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// shortTemp is a directory with a path short enough for unix sockets.
func shortTemp(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "mp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func TestMetricsEndpointFollowsActions(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	e.cfg.MetricsAddr = "127.0.0.1:0"
	a := e.start(t)
	c := runAgent(t, a)
	ctx := context.Background()

	if code, body := get(t, a, PathHealthz); code != http.StatusOK || strings.TrimSpace(body) != "ok" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	if code, body := get(t, a, PathReadyz); code != http.StatusOK {
		t.Fatalf("/readyz with no plugin dir: %d %q", code, body)
	}
	_, before := get(t, a, PathMetrics)
	idle := `gpu="0",profile="2g\.10gb",state="idle"`
	inUse := `gpu="0",profile="2g\.10gb",state="in-use"`
	if v := sample(t, before, "migpro_instances", idle); v != -1 {
		t.Fatalf("idle 2g.10gb before any action = %v, want no series (only combinations that had an instance):\n%s", v, before)
	}
	if n := strings.Count(before, "\nmigpro_instances{"); n != 0 {
		t.Fatalf("%d migpro_instances series before any instance, want 0", n)
	}
	for _, fam := range []string{"migpro_telemetry_datagrams_total", "migpro_predictor_marks_total"} {
		if !strings.Contains(before, "# TYPE "+fam+" ") {
			t.Errorf("family %s missing", fam)
		}
	}

	r, err := c.Alloc(ctx, client.AllocRequest{Profile: "2g.10gb", Owner: "m"})
	if err != nil {
		t.Fatal(err)
	}
	_, mid := get(t, a, PathMetrics)
	if v := sample(t, mid, "migpro_instances", inUse); v != 1 {
		t.Fatalf("in-use 2g.10gb after alloc = %v, want 1:\n%s", v, mid)
	}
	if v := sample(t, mid, "migpro_nvml_operations_total", `operation="create_gpu_instance",result="ok"`); v != 1 {
		t.Fatalf("GPU instance creates = %v, want 1", v)
	}
	if v := sample(t, mid, "migpro_nvml_operation_duration_seconds_count", `operation="create_compute_instance"`); v != 1 {
		t.Fatalf("compute instance create latency samples = %v, want 1", v)
	}

	if err := c.Free(ctx, r.CDIName); err != nil {
		t.Fatal(err)
	}
	_, after := get(t, a, PathMetrics)
	if v := sample(t, after, "migpro_instances", inUse); v != 0 {
		t.Fatalf("in-use 2g.10gb after free = %v, want 0 (the series stays)", v)
	}
	if n := strings.Count(after, "\nmigpro_instances{"); n > 2 {
		t.Fatalf("%d migpro_instances series after one instance came and went, want at most 2 (in-use, idle)", n)
	}
	if v := sample(t, after, "migpro_nvml_operations_total", `operation="destroy_gpu_instance",result="ok"`); v != 1 {
		t.Fatalf("GPU instance destroys = %v, want 1", v)
	}
}

func TestReadyWaitsForKubeletRegistrationAndAllocateIsTimed(t *testing.T) {
	dir := shortTemp(t)
	e := newEnv(t, "a100-40gb")
	e.cfg.MetricsAddr = "127.0.0.1:0"
	e.cfg.PluginDir = dir
	a := e.start(t)
	// A kubelet that is there but has not answered yet: the socket exists,
	// nothing serves it.
	k := plugintest.ListenKubelet(t, dir, 0)
	runAgent(t, a)
	code, body := get(t, a, PathReadyz)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "not registered") && !strings.Contains(body, "not started") {
		t.Fatalf("/readyz before the kubelet answers: %d %q, want 503 naming unregistered plugins", code, body)
	}
	k.Serve()
	waitFor(t, "/readyz 200 once every plugin registered", func() bool {
		code, _ := get(t, a, PathReadyz)
		return code == http.StatusOK
	})

	// The kubelet's Allocate, on the plugin socket, is timed.
	in, _, err := a.part.Provision(context.Background(), "1g.5gb")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, plugin.SocketName("1g.5gb")), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := v1beta1.NewDevicePluginClient(conn).Allocate(context.Background(), &v1beta1.AllocateRequest{
		ContainerRequests: []*v1beta1.ContainerAllocateRequest{{DevicesIds: []string{in.UUID}}}}); err != nil {
		t.Fatal(err)
	}
	_, m := get(t, a, PathMetrics)
	if v := sample(t, m, "migpro_kubelet_allocate_duration_seconds_count", `resource="nvidia\.com/mig-1g\.5gb",result="ok"`); v != 1 {
		t.Fatalf("Allocate latency samples = %v, want 1:\n%s", v, m)
	}
}

// The demand families follow what the cluster provisioner does: a served
// provision, one that must wait, and the demand waiting now.
func TestMetricsDemandServedAndWaiting(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	e.cfg.MetricsAddr = "127.0.0.1:0"
	a := e.start(t)
	runAgent(t, a)
	ctx := context.Background()
	p := a.ClusterProvisioner()
	for i := 0; i < 2; i++ {
		if err := p.Provision(ctx, "3g.20gb", nil); err != nil {
			t.Fatal(err)
		}
	}
	// Both idle 3g.20gb are reserved, so a third must wait.
	if err := p.Provision(ctx, "3g.20gb", map[string]int{"3g.20gb": 2}); !errors.Is(err, partitioner.ErrMustWait) {
		t.Fatalf("third 3g.20gb: %v, want ErrMustWait", err)
	}
	p.ObservePending(map[string]int{"3g.20gb": 1, "1g.5gb": 3})
	_, body := get(t, a, PathMetrics)
	for _, c := range []struct {
		name, labels string
		want         float64
	}{
		{"migpro_demand_provisions_total", `profile="3g\.20gb",result="served"`, 2},
		{"migpro_demand_provisions_total", `profile="3g\.20gb",result="waiting"`, 1},
		{"migpro_demand_waiting", `profile="3g\.20gb"`, 1},
		{"migpro_demand_waiting", `profile="1g\.5gb"`, 3},
		{"migpro_demand_waiting", `profile="7g\.40gb"`, 0},
	} {
		if v := sample(t, body, c.name, c.labels); v != c.want {
			t.Errorf("%s{%s} = %v, want %v", c.name, c.labels, v, c.want)
		}
	}
	p.ObservePending(nil)
	if _, body = get(t, a, PathMetrics); sample(t, body, "migpro_demand_waiting", `profile="1g\.5gb"`) != 0 {
		t.Errorf("1g.5gb still waiting after the source reported nothing waits")
	}
}
