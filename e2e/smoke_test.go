//go:build e2e

package e2e

// Smoke tests of the e2e harness: each proves one real engine applies a CDI
// device (an env var and a char device node 195:0 with no driver behind
// it) to a real container, and checks what the container itself saw.

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/pkg/cdi"
	"github.com/containerd/containerd/v2/pkg/oci"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	cdispecs "tags.cncf.io/container-device-interface/specs-go"

	"github.com/migpro/migpro/e2e/harness"
)

const (
	smokeKind   = "migpro-e2e.test/smoke"
	smokeDevice = smokeKind + "=dev0"
	// smokeScript prints what the container sees of the CDI device.
	smokeScript = `echo "env=$MIGPRO_SMOKE"; ls -l /dev/migpro-smoke0; cat /dev/migpro-smoke0`
)

// writeSmokeSpec writes the smoke CDI spec into dir (harness.CDIDir when
// empty): device dev0 sets MIGPRO_SMOKE=dev0 and adds /dev/migpro-smoke0,
// made from a host node `mknod c 195 0`.
func writeSmokeSpec(t *testing.T, dir string) {
	t.Helper()
	host := filepath.Join(t.TempDir(), "smoke0")
	harness.Mknod(t, host, 195, 0)
	spec := &cdispecs.Spec{
		Kind: smokeKind,
		Devices: []cdispecs.Device{{
			Name: "dev0",
			ContainerEdits: cdispecs.ContainerEdits{
				Env: []string{"MIGPRO_SMOKE=dev0"},
				DeviceNodes: []*cdispecs.DeviceNode{{
					Path: "/dev/migpro-smoke0", HostPath: host, Type: "c", Major: 195, Minor: 0, Permissions: "rw",
				}},
			},
		}},
	}
	v, err := cdispecs.MinimumRequiredVersion(spec)
	if err != nil {
		t.Fatal(err)
	}
	spec.Version = v
	harness.WriteCDISpec(t, dir, spec)
}

// checkSmokeOutput asserts the container saw the env and could open the
// device through its cgroup (ENXIO, not EPERM).
func checkSmokeOutput(t *testing.T, out string) {
	t.Helper()
	t.Logf("container output:\n%s", out)
	if !strings.Contains(out, "env=dev0") {
		t.Errorf("container did not see MIGPRO_SMOKE=dev0; output:\n%s", out)
	}
	if !strings.Contains(out, "No such device or address") {
		t.Errorf("container could not open /dev/migpro-smoke0 as an allowed device; output:\n%s", out)
	}
	if strings.Contains(out, "Operation not permitted") {
		t.Errorf("device cgroup denied /dev/migpro-smoke0; output:\n%s", out)
	}
}

func TestSmokePodman(t *testing.T) {
	p := harness.Podman(t)
	rootfs := harness.BusyboxRootfs(t)
	writeSmokeSpec(t, "")

	r := p.RunRootfs(t, rootfs, harness.DeviceFlags(smokeDevice), "sh", "-c", smokeScript)
	// cat fails, so the script exits non-zero: check the output, not the exit.
	checkSmokeOutput(t, r.Combined())

	// Without the device the container sees neither (the check can fail).
	r = p.RunRootfs(t, rootfs, nil, "sh", "-c", smokeScript)
	if strings.Contains(r.Combined(), "env=dev0") || r.ExitCode == 0 {
		t.Errorf("container without the CDI device saw it; output:\n%s", r.Combined())
	}
}

func TestSmokeContainerdClient(t *testing.T) {
	c := harness.StartContainerd(t)
	c.ImportArchive(t, "migpro-e2e", harness.BusyboxImage(t))
	// A private spec directory for the client-side CDI cache.
	specDir := t.TempDir()
	harness.ConfigureCDI(t, specDir)
	writeSmokeSpec(t, specDir)

	r := c.RunTask(t, "migpro-e2e", "smoke-client", harness.BusyboxImageName,
		oci.WithProcessArgs("sh", "-c", smokeScript), cdi.WithCDIDevices(smokeDevice))
	checkSmokeOutput(t, r.Combined())
}

func TestSmokeCtr(t *testing.T) {
	c := harness.StartContainerd(t)
	c.ImportArchive(t, "migpro-e2e", harness.BusyboxImage(t))
	writeSmokeSpec(t, "")

	args := append([]string{"-n", "migpro-e2e", "run", "--rm"}, c.CtrRunFlags()...)
	args = append(args, harness.DeviceFlags(smokeDevice)...)
	args = append(args, harness.BusyboxImageName, "smoke-ctr", "sh", "-c", smokeScript)
	r := c.Ctr(t, args...)
	checkSmokeOutput(t, r.Combined())
}

func TestSmokeKubelet(t *testing.T) {
	c := harness.StartContainerd(t)
	k := harness.StartKubelet(t, harness.KubeletOptions{Containerd: c})
	c.ImportArchive(t, "k8s.io", harness.BusyboxImage(t))
	writeSmokeSpec(t, "")
	plugin := startSmokePlugin(t, smokeKind, smokeDevice)

	runSmokeStaticPod(t, k, "smoke")
	if n := plugin.allocated(); n != 1 {
		t.Errorf("plugin Allocate called %d times, want 1", n)
	}
	k.RemoveStaticPod(t, "smoke")
	k.WaitPodGone(t, "smoke", 60*time.Second)

	// After a restart the kubelet has a new kubelet.sock and has wiped the
	// plugin directory: a plugin that registers again serves a new pod.
	k.Restart(t)
	plugin = startSmokePlugin(t, smokeKind, smokeDevice)
	runSmokeStaticPod(t, k, "smoke2")
	if n := plugin.allocated(); n != 1 {
		t.Errorf("plugin Allocate after restart called %d times, want 1", n)
	}
}

// runSmokeStaticPod runs a static pod requesting the smoke device and checks
// what its container saw.
func runSmokeStaticPod(t *testing.T, k *harness.Kubelet, name string) {
	t.Helper()
	k.WriteStaticPod(t, name, devicePod(name, smokeKind, smokeScript+"; sleep 600"))
	k.WaitPodRunning(t, name, 60*time.Second)
	var out string
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if out = k.ContainerLog(t, name, "main"); strings.Contains(out, "No such device") {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	checkSmokeOutput(t, out)
}

func TestSmokeCluster(t *testing.T) {
	cl := harness.StartCluster(t)
	c := harness.StartContainerd(t)
	k := harness.StartKubelet(t, harness.KubeletOptions{Containerd: c, Cluster: cl})
	c.ImportArchive(t, "k8s.io", harness.BusyboxImage(t))
	writeSmokeSpec(t, "")
	startSmokePlugin(t, smokeKind, smokeDevice)
	start := time.Now()
	cl.WaitNodeReady(t, k.NodeName, 60*time.Second)
	t.Logf("node Ready after %v", time.Since(start).Round(time.Millisecond))

	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := cl.Client.CoreV1().Nodes().Get(ctx, k.NodeName, metav1.GetOptions{})
		if err == nil && n.Status.Allocatable.Name(smokeKind, resource.DecimalSI).Value() == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node never advertised %s: %v", smokeKind, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("node advertises %s after %v", smokeKind, time.Since(start).Round(time.Millisecond))

	no := false
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "smoke", Namespace: "default"},
		Spec: corev1.PodSpec{
			HostNetwork: true, RestartPolicy: corev1.RestartPolicyNever, AutomountServiceAccountToken: &no,
			Containers: []corev1.Container{{
				Name: "main", Image: harness.BusyboxImageName, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sh", "-c", smokeScript + "; sleep 600"},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
					corev1.ResourceName(smokeKind): resource.MustParse("1")}},
			}},
		},
	}
	if _, err := cl.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	var out string
	deadline = time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		// Logs through the API server, so apiserver -> kubelet works too.
		b, err := cl.Client.CoreV1().Pods("default").GetLogs("smoke", &corev1.PodLogOptions{Container: "main"}).DoRaw(ctx)
		if out = string(b); err == nil && strings.Contains(out, "No such device") {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("pod output read after %v", time.Since(start).Round(time.Millisecond))
	checkSmokeOutput(t, out)
	if err := cl.Client.CoreV1().Pods("default").Delete(ctx, "smoke", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pod: %v", err)
	}
}

// smokePlugin is a minimal device plugin: one healthy device "dev0" whose
// Allocate answers with a CDI device name.
type smokePlugin struct {
	pluginapi.UnimplementedDevicePluginServer
	cdiName string
	allocs  chan struct{}
	watched chan struct{}
}

// startSmokePlugin serves the plugin in harness.DevicePluginDir, registers
// resource with the kubelet (retrying while kubelet.sock is not ready), and
// waits until the kubelet has called ListAndWatch.
func startSmokePlugin(t *testing.T, resource, cdiName string) *smokePlugin {
	t.Helper()
	p := &smokePlugin{cdiName: cdiName, allocs: make(chan struct{}, 100), watched: make(chan struct{}, 1)}
	sockName := "migpro-e2e-smoke.sock"
	sock := filepath.Join(harness.DevicePluginDir, sockName)
	os.Remove(sock)
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatalf("listen %s: %v", sock, err)
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, p)
	go srv.Serve(lis)
	t.Cleanup(func() { srv.Stop(); os.Remove(sock) })

	conn, err := grpc.NewClient("unix://"+harness.KubeletSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := &pluginapi.RegisterRequest{Version: pluginapi.Version, Endpoint: sockName, ResourceName: resource}
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := pluginapi.NewRegistrationClient(conn).Register(ctx, req)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("register %s with the kubelet: %v", resource, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	select {
	case <-p.watched:
	case <-time.After(15 * time.Second):
		t.Fatal("kubelet did not call ListAndWatch within 15s")
	}
	// The kubelet updates its capacity right after the first response.
	time.Sleep(500 * time.Millisecond)
	return p
}

func (p *smokePlugin) allocated() int { return len(p.allocs) }

func (p *smokePlugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

func (p *smokePlugin) ListAndWatch(_ *pluginapi.Empty, s pluginapi.DevicePlugin_ListAndWatchServer) error {
	err := s.Send(&pluginapi.ListAndWatchResponse{Devices: []*pluginapi.Device{{ID: "dev0", Health: pluginapi.Healthy}}})
	if err != nil {
		return err
	}
	select {
	case p.watched <- struct{}{}:
	default:
	}
	<-s.Context().Done()
	return nil
}

func (p *smokePlugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	resp := &pluginapi.AllocateResponse{}
	for range req.ContainerRequests {
		p.allocs <- struct{}{}
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			CdiDevices: []*pluginapi.CDIDevice{{Name: p.cdiName}},
		})
	}
	return resp, nil
}
