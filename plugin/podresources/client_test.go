package podresources

import (
	"context"
	"maps"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// fakeKubelet serves the PodResources API with a fixed answer.
type fakeKubelet struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
	resp *podresourcesv1.ListPodResourcesResponse
}

func (k *fakeKubelet) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	return k.resp, nil
}

func serve(t *testing.T, resp *podresourcesv1.ListPodResourcesResponse) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "kubelet.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(s, &fakeKubelet{resp: resp})
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return sock
}

func ctrDevices(resource string, ids ...string) *podresourcesv1.ContainerDevices {
	return &podresourcesv1.ContainerDevices{ResourceName: resource, DeviceIds: ids}
}

var listResponse = &podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{
	{Name: "train", Namespace: "ml", Containers: []*podresourcesv1.ContainerResources{
		{Name: "main", Devices: []*podresourcesv1.ContainerDevices{
			ctrDevices("nvidia.com/mig-2g.20gb", "MIG-a"),
			ctrDevices("example.com/nic", "nic0"),
		}},
		{Name: "side", Devices: []*podresourcesv1.ContainerDevices{ctrDevices("nvidia.com/mig-1g.10gb", "MIG-b", "MIG-c")}},
	}},
	{Name: "web", Namespace: "default", Containers: []*podresourcesv1.ContainerResources{{Name: "nginx"}}},
}}

func TestClientAssignedDevices(t *testing.T) {
	sock := serve(t, listResponse)
	c, err := New(WithSocket(sock), WithResourcePrefix("nvidia.com/mig-"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := c.AssignedDevices(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]PodRef{
		"MIG-a": {"ml", "train", "main", "nvidia.com/mig-2g.20gb"},
		"MIG-b": {"ml", "train", "side", "nvidia.com/mig-1g.10gb"},
		"MIG-c": {"ml", "train", "side", "nvidia.com/mig-1g.10gb"},
	}
	if !maps.Equal(got, want) {
		t.Errorf("AssignedDevices = %v, want %v", got, want)
	}

	all, err := New(WithSocket(sock))
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	got, err = all.AssignedDevices(context.Background())
	if err != nil || len(got) != 4 || got["nic0"].Container != "main" {
		t.Errorf("without a prefix: %v, %v", got, err)
	}
}

func TestClientKubeletDown(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "absent.sock")
	c, err := New(WithSocket(sock), WithTimeout(2*time.Second))
	if err != nil {
		t.Fatalf("New must not need the kubelet: %v", err)
	}
	defer c.Close()
	_, err = c.AssignedDevices(context.Background())
	if err == nil || !strings.Contains(err.Error(), sock) || strings.Contains(err.Error(), "\n") {
		t.Errorf("err = %v, want one line naming the socket", err)
	}
	if _, err := New(WithSocket("")); err == nil {
		t.Error("empty socket accepted")
	}
}
