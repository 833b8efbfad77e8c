//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/e2e/harness"
)

const migResource = "nvidia.com/mig-1g.5gb"

func migPod(name string) string {
	return devicePod(name, migResource, devScript+"; sleep 600")
}

// devicePod is a host-network pod whose one busybox container asks for one
// of resource and runs script.
func devicePod(name, resource, script string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: default
spec:
  hostNetwork: true
  restartPolicy: Never
  containers:
  - name: main
    image: %s
    imagePullPolicy: Never
    command: ["sh", "-c", %q]
    resources:
      limits:
        %s: 1
`, name, harness.BusyboxImageName, script, resource)
}

// registeredDevices asks the kubelet which devices of a resource it holds
// as allocatable (PodResources GetAllocatableResources: its in-memory view
// of what the plugins advertised). The kubelet's device-plugin checkpoint
// file is not a substitute: the kubelet writes it outside its lock, so two
// quick updates of one resource can leave the older list on disk for good.
func registeredDevices(socket, resource string) []string {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := podresourcesv1.NewPodResourcesListerClient(conn).GetAllocatableResources(ctx, &podresourcesv1.AllocatableResourcesRequest{})
	if err != nil {
		return nil
	}
	var ids []string
	for _, d := range resp.GetDevices() {
		if d.GetResourceName() == resource {
			ids = append(ids, d.GetDeviceIds()...)
		}
	}
	return ids
}

// within polls cond until it holds or timeout passes, and reports which.
func within(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
	return true
}

func eventually(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	if !within(timeout, cond) {
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

// podUUID waits for a pod's container to print its MIG UUID and checks what
// it saw of the instance.
func podUUID(t *testing.T, k *harness.Kubelet, pod string) string {
	t.Helper()
	k.WaitPodRunning(t, pod, 90*time.Second)
	re := regexp.MustCompile(`NVD=(MIG-[0-9a-f-]+)`)
	var out string
	eventually(t, pod+" output", 30*time.Second, func() bool {
		out = k.ContainerLog(t, pod, "main")
		return re.MatchString(out) && strings.Contains(out, "READ=")
	})
	uuid := re.FindStringSubmatch(out)[1]
	checkDeviceView(t, out, uuid)
	return uuid
}

func instanceByUUID(st client.Status, uuid string) (client.StatusInstance, bool) {
	for _, in := range st.Instances {
		if in.UUID == uuid {
			return in, true
		}
	}
	return client.StatusInstance{}, false
}

// Issue 3, e2e 3: the real kubelet calls Allocate on the real plugin.
func TestAgentKubelet(t *testing.T) {
	c := harness.StartContainerd(t)
	k := harness.StartKubelet(t, harness.KubeletOptions{Containerd: c})
	c.ImportArchive(t, "k8s.io", harness.BusyboxImage(t))
	a := startAgent(t, "a100-40gb",
		"--plugin-dir", harness.DevicePluginDir, "--pod-resources", k.PodResourcesSocket(),
		"--warm-pool", "1g.5gb=2", "--assign-grace", "3s")
	sock := k.PodResourcesSocket()
	if !within(30*time.Second, func() bool { return len(registeredDevices(sock, migResource)) == 2 }) {
		t.Fatalf("timed out after 30s waiting for two 1g.5gb registered with the kubelet (registered %v)\nagent log:\n%s\nkubelet log:\n%s",
			registeredDevices(sock, migResource), a.logTail(), tail(k.Log(), 6000))
	}

	// Two pods get two different instances, and see them.
	k.WriteStaticPod(t, "p1", migPod("p1"))
	k.WriteStaticPod(t, "p2", migPod("p2"))
	u1, u2 := podUUID(t, k, "p1"), podUUID(t, k, "p2")
	if u1 == u2 {
		t.Fatalf("two pods got the same instance %s", u1)
	}
	eventually(t, "agent sees both pods", 20*time.Second, func() bool {
		st := a.status(t)
		i1, _ := instanceByUUID(st, u1)
		i2, _ := instanceByUUID(st, u2)
		return i1.State == "in-use" && strings.Contains(i1.Pod, "p1") && i2.State == "in-use" && strings.Contains(i2.Pod, "p2")
	})

	// Deleting a pod returns its instance to idle.
	k.RemoveStaticPod(t, "p1")
	k.WaitPodGone(t, "p1", 60*time.Second)
	eventually(t, "p1's instance back to idle", 30*time.Second, func() bool {
		in, ok := instanceByUUID(a.status(t), u1)
		return ok && in.State == "idle"
	})

	// A kubelet restart: the plugin re-registers and a later pod still gets
	// a device.
	// The restarted kubelet knows only what the plugin registered with it
	// since.
	k.Restart(t)
	eventually(t, "re-registration after the kubelet restart", 60*time.Second, func() bool {
		return len(registeredDevices(sock, migResource)) >= 2
	})
	k.WriteStaticPod(t, "p3", migPod("p3"))
	u3 := podUUID(t, k, "p3")
	if u3 == u2 {
		t.Fatalf("p3 got p2's instance")
	}

	// kill -9 of the agent while pods run, then a restart: the instances are
	// intact, still held, and still advertised.
	a.crashAndRestart(t)
	st := a.status(t)
	for _, u := range []string{u2, u3} {
		in, ok := instanceByUUID(st, u)
		if !ok || in.State != "in-use" {
			t.Fatalf("after the agent crash, %s is %+v (present %v), want in use\n%s", u, in, ok, a.logTail())
		}
	}
	if !strings.Contains(k.ContainerLog(t, "p2", "main"), u2) {
		t.Fatal("p2 lost its instance")
	}
	eventually(t, "devices advertised again after the agent restart", 60*time.Second, func() bool {
		reg := registeredDevices(sock, migResource)
		return contains(reg, u2) && contains(reg, u3)
	})
	k.WriteStaticPod(t, "p4", migPod("p4"))
	if u4 := podUUID(t, k, "p4"); u4 == u2 || u4 == u3 {
		t.Fatalf("p4 got an instance already in use: %s", u4)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
