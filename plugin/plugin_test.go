package plugin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/migpro/migpro/defaults"

	"github.com/migpro/migpro/plugin/plugintest"
)

const (
	uuidA = "MIG-aaaaaaaa-1111-2222-3333-444444444444"
	uuidB = "MIG-bbbbbbbb-1111-2222-3333-444444444444"
	uuidC = "MIG-cccccccc-1111-2222-3333-444444444444"
)

func dev(id string, healthy bool) Device {
	return Device{ID: id, CDIName: "migpro.dev/mig=" + id, Healthy: healthy}
}

// recvList waits for the next ListAndWatch response and renders it as
// "ID:Health" strings.
func recvList(t *testing.T, s grpc.ServerStreamingClient[v1beta1.ListAndWatchResponse]) []string {
	t.Helper()
	type res struct {
		r   *v1beta1.ListAndWatchResponse
		err error
	}
	ch := make(chan res, 1)
	go func() { r, err := s.Recv(); ch <- res{r, err} }()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("ListAndWatch: %v", r.err)
		}
		out := []string{}
		for _, d := range r.r.Devices {
			out = append(out, d.ID+":"+d.Health)
		}
		return out
	case <-time.After(10 * time.Second):
		t.Fatal("no ListAndWatch update within 10s")
		return nil
	}
}

func TestRegisterAndListAndWatch(t *testing.T) {
	dir := shortDir(t)
	k := plugintest.StartKubelet(t, dir, 0)
	inv := newFakeInventory("1g.10gb")
	startManager(t, dir, inv)

	r := k.Next(t)
	if r.Version != v1beta1.Version || r.ResourceName != "nvidia.com/mig-1g.10gb" || r.Endpoint != "migpro-1g.10gb.sock" {
		t.Fatalf("registration = %+v", r)
	}
	if !r.Options.GetGetPreferredAllocationAvailable() {
		t.Error("registration does not advertise GetPreferredAllocation")
	}

	c := dialPlugin(t, dir+"/"+r.Endpoint)
	opts, err := c.GetDevicePluginOptions(context.Background(), &v1beta1.Empty{})
	if err != nil || !opts.GetPreferredAllocationAvailable || opts.PreStartRequired {
		t.Fatalf("options = %+v, %v", opts, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := c.ListAndWatch(ctx, &v1beta1.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name   string
		change func()
		want   []string
	}{
		{"initial", func() {}, []string{}},
		{"create A", func() { inv.Put("1g.10gb", dev(uuidA, true)) }, []string{uuidA + ":Healthy"}},
		{"create B", func() { inv.Put("1g.10gb", dev(uuidB, true)) }, []string{uuidA + ":Healthy", uuidB + ":Healthy"}},
		{"A unhealthy", func() { inv.Put("1g.10gb", dev(uuidA, false)) }, []string{uuidA + ":Unhealthy", uuidB + ":Healthy"}},
		{"destroy B", func() { inv.Delete("1g.10gb", uuidB) }, []string{uuidA + ":Unhealthy"}},
		// A change of another profile sends nothing; the next real change does.
		{"other profile, then create C", func() {
			inv.Put("2g.20gb", dev(uuidB, true))
			inv.Put("1g.10gb", dev(uuidC, true))
		}, []string{uuidA + ":Unhealthy", uuidC + ":Healthy"}},
	}
	for _, st := range steps {
		st.change()
		if got := recvList(t, stream); !slices.Equal(got, st.want) {
			t.Fatalf("%s: list = %q, want %q", st.name, got, st.want)
		}
	}
}

func TestAllocate(t *testing.T) {
	dir := shortDir(t)
	k := plugintest.StartKubelet(t, dir, 0)
	inv := newFakeInventory("2g.20gb")
	inv.Put("2g.20gb", dev(uuidA, true))
	inv.Put("2g.20gb", dev(uuidB, true))
	inv.Put("2g.20gb", dev(uuidC, false))
	inv.Put("2g.20gb", Device{ID: "MIG-nospec", Healthy: true})
	destroying := "MIG-dddddddd-1111-2222-3333-444444444444"
	inv.Put("2g.20gb", dev(destroying, true))
	var checked [][]string
	check := func(_ context.Context, profile string, ids []string) error {
		checked = append(checked, ids)
		if profile != "2g.20gb" {
			return fmt.Errorf("wrong profile %q", profile)
		}
		if slices.Contains(ids, destroying) {
			return errors.New("instance is being destroyed")
		}
		if slices.Contains(ids, uuidB) && len(ids) > 1 {
			return status.Error(codes.ResourceExhausted, "custom refusal")
		}
		return nil
	}
	startManager(t, dir, inv, WithAllocateCheck(check))
	c := dialPlugin(t, dir+"/"+k.Next(t).Endpoint)

	resp, err := c.Allocate(context.Background(), &v1beta1.AllocateRequest{ContainerRequests: []*v1beta1.ContainerAllocateRequest{
		{DevicesIds: []string{uuidA}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ContainerResponses) != 1 {
		t.Fatalf("responses = %d", len(resp.ContainerResponses))
	}
	cr := resp.ContainerResponses[0]
	if len(cr.CdiDevices) != 1 || cr.CdiDevices[0].Name != "migpro.dev/mig="+uuidA {
		t.Errorf("CdiDevices = %v", cr.CdiDevices)
	}
	if cr.Envs["NVIDIA_VISIBLE_DEVICES"] != uuidA || cr.Envs["CUDA_VISIBLE_DEVICES"] != uuidA {
		t.Errorf("envs = %v", cr.Envs)
	}
	if len(checked) != 1 || !slices.Equal(checked[0], []string{uuidA}) {
		t.Errorf("allocate check saw %q", checked)
	}

	bad := []struct {
		name string
		ids  []string
		code codes.Code
		msg  string
	}{
		{"unknown", []string{"MIG-nope"}, codes.NotFound, `"MIG-nope" is not advertised`},
		{"unhealthy", []string{uuidC}, codes.FailedPrecondition, "unhealthy"},
		{"no CDI spec", []string{"MIG-nospec"}, codes.FailedPrecondition, "no CDI spec"},
		{"being destroyed", []string{destroying}, codes.FailedPrecondition, "being destroyed"},
		{"status from check passes through", []string{uuidA, uuidB}, codes.ResourceExhausted, "custom refusal"},
		{"empty", nil, codes.InvalidArgument, "names no device"},
	}
	for _, b := range bad {
		_, err := c.Allocate(context.Background(), &v1beta1.AllocateRequest{ContainerRequests: []*v1beta1.ContainerAllocateRequest{{DevicesIds: b.ids}}})
		st, _ := status.FromError(err)
		if err == nil || st.Code() != b.code || !strings.Contains(st.Message(), b.msg) || !strings.Contains(st.Message(), "nvidia.com/mig-2g.20gb") {
			t.Errorf("%s: err = %v, want %v mentioning %q and the resource", b.name, err, b.code, b.msg)
		}
	}

	// Two containers, one with two devices.
	resp, err = c.Allocate(context.Background(), &v1beta1.AllocateRequest{ContainerRequests: []*v1beta1.ContainerAllocateRequest{
		{DevicesIds: []string{uuidB}}, {DevicesIds: []string{uuidA, destroying + "x"}},
	}})
	if err == nil {
		t.Fatalf("allocation with an unknown device in the second container succeeded: %v", resp)
	}
	inv.Put("2g.20gb", dev(uuidC, true))
	resp, err = c.Allocate(context.Background(), &v1beta1.AllocateRequest{ContainerRequests: []*v1beta1.ContainerAllocateRequest{
		{DevicesIds: []string{uuidB}}, {DevicesIds: []string{uuidA, uuidC}},
	}})
	if err != nil {
		t.Fatalf("healthy again: %v", err)
	}
	if got := resp.ContainerResponses[1].Envs["CUDA_VISIBLE_DEVICES"]; got != uuidA+","+uuidC {
		t.Errorf("two-device env = %q", got)
	}
	if n := len(resp.ContainerResponses[1].CdiDevices); n != 2 {
		t.Errorf("two-device CdiDevices = %d", n)
	}
}

func TestGetPreferredAllocation(t *testing.T) {
	dir := shortDir(t)
	k := plugintest.StartKubelet(t, dir, 0)
	inv := newFakeInventory("1g.5gb")
	var asked string
	prefer := func(profile string, available, must []string, size int) []string {
		asked = profile
		if size == 2 {
			return []string{"bogus", "x"} // breaks the rules: default used
		}
		// Prefer the last available (e.g. the instance at slot 6).
		return []string{available[len(available)-1]}
	}
	startManager(t, dir, inv, WithPreference(prefer))
	c := dialPlugin(t, dir+"/"+k.Next(t).Endpoint)

	req := func(avail, must []string, size int32) []string {
		t.Helper()
		r, err := c.GetPreferredAllocation(context.Background(), &v1beta1.PreferredAllocationRequest{
			ContainerRequests: []*v1beta1.ContainerPreferredAllocationRequest{{AvailableDeviceIDs: avail, MustIncludeDeviceIDs: must, AllocationSize: size}}})
		if err != nil {
			t.Fatal(err)
		}
		return r.ContainerResponses[0].DeviceIDs
	}
	if got := req([]string{uuidA, uuidB, uuidC}, nil, 1); !slices.Equal(got, []string{uuidC}) || asked != "1g.5gb" {
		t.Errorf("custom preference: got %q (asked %q)", got, asked)
	}
	if got := req([]string{uuidC, uuidB, uuidA}, []string{uuidC}, 2); !slices.Equal(got, []string{uuidC, uuidA}) {
		t.Errorf("fallback to default: got %q", got)
	}
	_, err := c.GetPreferredAllocation(context.Background(), &v1beta1.PreferredAllocationRequest{
		ContainerRequests: []*v1beta1.ContainerPreferredAllocationRequest{{AvailableDeviceIDs: []string{uuidA}, AllocationSize: 3}}})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("oversized request: err = %v", err)
	}
}

func TestDefaultPreference(t *testing.T) {
	cases := []struct {
		avail, must []string
		size        int
		want        []string
	}{
		{[]string{"c", "a", "b"}, nil, 2, []string{"a", "b"}},
		{[]string{"c", "a", "b"}, []string{"c"}, 2, []string{"c", "a"}},
		{[]string{"c", "a", "b"}, []string{"b", "c"}, 3, []string{"b", "c", "a"}},
		{[]string{"a"}, nil, 0, []string{}},
	}
	for _, c := range cases {
		got := DefaultPreference("p", c.avail, c.must, c.size)
		if !slices.Equal(got, c.want) {
			t.Errorf("DefaultPreference(%q, %q, %d) = %q, want %q", c.avail, c.must, c.size, got, c.want)
		}
		if !validPreference(got, c.avail, c.must, c.size) {
			t.Errorf("default answer %q judged invalid", got)
		}
	}
	if validPreference([]string{"a", "a"}, []string{"a", "b"}, nil, 2) {
		t.Error("duplicate IDs judged valid")
	}
	if validPreference([]string{"a"}, []string{"a", "b"}, []string{"b"}, 1) {
		t.Error("missing mustInclude judged valid")
	}
}

func TestNames(t *testing.T) {
	cases := []struct{ domain, profile, resource, socket string }{
		{"nvidia.com", "1g.10gb", "nvidia.com/mig-1g.10gb", "migpro-1g.10gb.sock"},
		{"nvidia.com", "1g.10gb+me", "nvidia.com/mig-1g.10gb.me", "migpro-1g.10gb.me.sock"},
		{"example.org", "7g.80gb", "example.org/mig-7g.80gb", "migpro-7g.80gb.sock"},
	}
	for _, c := range cases {
		if got := defaults.ResourceName(c.domain, c.profile); got != c.resource {
			t.Errorf("defaults.ResourceName(%q, %q) = %q, want %q", c.domain, c.profile, got, c.resource)
		}
		if got := SocketName(c.profile); got != c.socket {
			t.Errorf("SocketName(%q) = %q, want %q", c.profile, got, c.socket)
		}
	}
	for _, bad := range []string{"", "1g/5gb", "1g 5gb"} {
		if validProfile(bad) == nil {
			t.Errorf("profile %q accepted", bad)
		}
	}
}
