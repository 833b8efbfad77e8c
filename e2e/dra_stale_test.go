//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/internal/quietlog"
	"github.com/migpro/migpro/partitioner"
)

// sliceWrites counts the ResourceSlice writes the API server took, through
// a watch: every ADDED or MODIFIED event is one create or update, and its
// object's protobuf size is what the API server stored.
type sliceWrites struct {
	mu     sync.Mutex
	writes int
	bytes  int
}

func watchSliceWrites(t *testing.T, n *draNode) *sliceWrites {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := n.cl.Client.ResourceV1().ResourceSlices().Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch ResourceSlices: %v", err)
	}
	s := &sliceWrites{}
	initial := true
	go func() {
		for ev := range w.ResultChan() {
			sl, ok := ev.Object.(*resourceapi.ResourceSlice)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				continue
			}
			s.mu.Lock()
			if !initial || ev.Type == watch.Modified {
				s.writes++
				s.bytes += sl.Size()
			}
			s.mu.Unlock()
		}
	}()
	// A watch from "now" first lists the existing slices as ADDED: they
	// are not writes of this run.
	time.Sleep(time.Second)
	s.mu.Lock()
	initial = false
	s.mu.Unlock()
	return s
}

func (s *sliceWrites) read() (int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes, s.bytes
}

var (
	preparedLine  = regexp.MustCompile(`msg="DRA: prepared" claim=\S+ device=(\S+) preferred=(true|false)`)
	publishedLine = regexp.MustCompile(`msg="DRA: published ResourceSlices" bytes=(\d+)`)
	deviceName    = regexp.MustCompile(`^gpu(\d+)-(.*)-s(\d+)$`)
)

// TestDRAStaleSlices measures how often the scheduler allocates a device
// other than migpro's first preference (a stale slice: several claims
// allocated before the republish that follows each Prepare), and the
// ResourceSlice churn, through the real scheduler and kubelet: three rounds
// of seven pods that arrive together on two A100s (four 1g.5gb, two
// 2g.10gb, one 3g.20gb), deleted after each round. Whatever the scheduler
// chose, every pod runs on an instance made at exactly the placement its
// claim was allocated. The figures are in the log (grep STALE-SLICES and
// SLICE-CHURN).
func TestDRAStaleSlices(t *testing.T) {
	// Idle instances go at once, so every round starts from empty GPUs
	// and can be compared with the partitioner's own placements for the
	// same requests.
	n := startDRANode(t, "a100-40gb:2", false, "--idle-timeout", "1s")
	profileOf := map[string]string{}
	for _, p := range []string{"1g.5gb", "2g.10gb", "3g.20gb"} {
		n.claimTemplate(t, "t-"+label(p), profileRequest(p))
		profileOf[label(p)] = p
	}
	writes := watchSliceWrites(t, n)
	logStart := len(readFile(n.a.log))
	claims, reachGot, reachWant := 0, 0, 0
	for round := 0; round < 3; round++ {
		roundStart := len(readFile(n.a.log))
		var pods []*corev1.Pod
		var names []string
		for i, p := range []string{"1g.5gb", "1g.5gb", "2g.10gb", "1g.5gb", "3g.20gb", "2g.10gb", "1g.5gb"} {
			name := fmt.Sprintf("s%d-%d", round, i)
			pods = append(pods, claimPod(name, "t-"+label(p)))
			names = append(names, name)
		}
		took := n.runPods(t, pods...)
		t.Logf("round %d: seven claims Running in %v", round, took.Round(time.Millisecond))
		for _, name := range names {
			n.checkAllocatedPlacement(t, name)
		}
		claims += len(names)
		// What a stale slice costs: the layouts the GPUs can still reach,
		// against the partitioner placing the same requests, in the order
		// they were prepared, itself.
		var order []string
		for _, m := range preparedLine.FindAllStringSubmatch(readFile(n.a.log)[roundStart:], -1) {
			order = append(order, profileOf[deviceName.FindStringSubmatch(m[1])[2]])
		}
		got, want := 0, reachableAfter(t, "a100-40gb:2", order)
		for _, g := range n.a.status(t).GPUs {
			got += g.Reachable
		}
		t.Logf("round %d: layouts still reachable %d, the partitioner's own placements for the same requests leave %d", round, got, want)
		reachGot += got
		reachWant += want
		n.deletePods(t, names...)
		eventually(t, "every instance destroyed", 60*time.Second, func() bool { return len(n.a.status(t).Instances) == 0 })
	}
	time.Sleep(time.Second) // the last republish and its writes
	log := readFile(n.a.log)[logStart:]
	prepared, stale := 0, 0
	for _, m := range preparedLine.FindAllStringSubmatch(log, -1) {
		prepared++
		if m[2] == "false" {
			stale++
		}
	}
	publishes, pubBytes := 0, 0
	for _, m := range publishedLine.FindAllStringSubmatch(log, -1) {
		publishes++
		b, _ := strconv.Atoi(m[1])
		pubBytes += b
	}
	w, wb := writes.read()
	t.Logf("STALE-SLICES %d claims prepared, %d not at migpro's first preference (%.0f%%); layouts still reachable with all seven running, summed over the rounds: %d, the partitioner alone %d",
		prepared, stale, 100*float64(stale)/float64(max(prepared, 1)), reachGot, reachWant)
	t.Logf("SLICE-CHURN %d publishes for %d claims prepared and unprepared (%.2f per claim), %d API writes (%.2f per publish), %.0f bytes per write, %.0f bytes of slices per publish",
		publishes, claims, float64(publishes)/float64(claims), w, float64(w)/float64(max(publishes, 1)), float64(wb)/float64(max(w, 1)), float64(pubBytes)/float64(max(publishes, 1)))
	if prepared != claims {
		t.Errorf("%d first Prepares logged, want one per claim (%d)", prepared, claims)
	}
	if publishes == 0 || w == 0 {
		t.Errorf("%d publishes, %d API writes: want the slices republished after the changes", publishes, w)
	}
}

// checkAllocatedPlacement checks that the pod's instance sits at exactly
// the placement its claim was allocated.
func (n *draNode) checkAllocatedPlacement(t *testing.T, pod string) {
	t.Helper()
	ctx := context.Background()
	p, err := n.cl.Client.CoreV1().Pods("default").Get(ctx, pod, metav1.GetOptions{})
	if err != nil || len(p.Status.ResourceClaimStatuses) != 1 || p.Status.ResourceClaimStatuses[0].ResourceClaimName == nil {
		t.Fatalf("pod %s: no claim in its status (%v)", pod, err)
	}
	c, err := n.cl.Client.ResourceV1().ResourceClaims("default").Get(ctx, *p.Status.ResourceClaimStatuses[0].ResourceClaimName, metav1.GetOptions{})
	if err != nil || c.Status.Allocation == nil || len(c.Status.Allocation.Devices.Results) != 1 {
		t.Fatalf("pod %s: claim not allocated (%v)", pod, err)
	}
	dev := c.Status.Allocation.Devices.Results[0].Device
	m := deviceName.FindStringSubmatch(dev)
	if m == nil {
		t.Fatalf("pod %s: allocated device %q is not migpro's", pod, dev)
	}
	in := instanceOf(t, n.a, podMIGs(t, n.cl, pod)[0])
	if strconv.Itoa(in.GPU) != m[1] || strconv.Itoa(in.Placement.Start) != m[3] {
		t.Errorf("pod %s runs on GPU %d slot %d, its claim was allocated %s", pod, in.GPU, in.Placement.Start, dev)
	}
}

// reachableAfter is how many layouts the partitioner leaves reachable on
// simulated GPUs after placing the profiles itself, one after the other.
func reachableAfter(t *testing.T, gpus string, profiles []string) int {
	t.Helper()
	sim, err := simgpu.NewNode(gpus, simgpu.WithRoot(t.TempDir()), simgpu.WithLogger(quietlog.New()))
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	ref, err := partitioner.New(sim, partitioner.WithLogger(quietlog.New()))
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range profiles {
		if _, _, err := ref.Allocate(context.Background(), p, "r"+strconv.Itoa(i)); err != nil {
			t.Fatalf("the partitioner alone: %s: %v", p, err)
		}
	}
	n := 0
	for _, g := range ref.GPUs() {
		n += g.Reachable
	}
	return n
}

// label is a profile's name as a DNS label, as the driver writes it.
func label(profile string) string {
	return regexp.MustCompile(`[^a-z0-9]`).ReplaceAllString(profile, "-")
}
