package podresources_test

import (
	"context"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/migpro/migpro/plugin/podresources"
	"github.com/migpro/migpro/plugin/podresources/podresourcestest"
)

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
	sock := podresourcestest.ServeKubelet(t, listResponse)
	c, err := podresources.New(podresources.WithSocket(sock), podresources.WithResourcePrefix("nvidia.com/mig-"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := c.AssignedDevices(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]podresources.PodRef{
		"MIG-a": {"ml", "train", "main", "nvidia.com/mig-2g.20gb"},
		"MIG-b": {"ml", "train", "side", "nvidia.com/mig-1g.10gb"},
		"MIG-c": {"ml", "train", "side", "nvidia.com/mig-1g.10gb"},
	}
	if !maps.Equal(got, want) {
		t.Errorf("AssignedDevices = %v, want %v", got, want)
	}

	all, err := podresources.New(podresources.WithSocket(sock))
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
	c, err := podresources.New(podresources.WithSocket(sock), podresources.WithTimeout(2*time.Second))
	if err != nil {
		t.Fatalf("New must not need the kubelet: %v", err)
	}
	defer c.Close()
	_, err = c.AssignedDevices(context.Background())
	if err == nil || !strings.Contains(err.Error(), sock) || strings.Contains(err.Error(), "\n") {
		t.Errorf("err = %v, want one line naming the socket", err)
	}
	if _, err := podresources.New(podresources.WithSocket("")); err == nil {
		t.Error("empty socket accepted")
	}
}
