package plugin

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// Env variables Allocate sets for runtimes without CDI.
const (
	envNvidiaVisibleDevices = "NVIDIA_VISIBLE_DEVICES"
	envCudaVisibleDevices   = "CUDA_VISIBLE_DEVICES"
)

// service implements the kubelet's DevicePlugin API for one profile.
type service struct {
	v1beta1.UnimplementedDevicePluginServer

	profile  string
	resource string
	inv      Inventory
	changed  *notifier
	check    AllocateCheck
	prefer   Preference
	observe  AllocateObserver
	log      logrus.FieldLogger
}

// GetDevicePluginOptions implements v1beta1.DevicePluginServer.
func (s *service) GetDevicePluginOptions(context.Context, *v1beta1.Empty) (*v1beta1.DevicePluginOptions, error) {
	return pluginOptions(), nil
}

func pluginOptions() *v1beta1.DevicePluginOptions {
	return &v1beta1.DevicePluginOptions{GetPreferredAllocationAvailable: true}
}

// ListAndWatch implements v1beta1.DevicePluginServer: it sends the current
// list, then a new one whenever the inventory's list for this profile
// differs from the last one sent, until the kubelet or the server ends it.
func (s *service) ListAndWatch(_ *v1beta1.Empty, stream grpc.ServerStreamingServer[v1beta1.ListAndWatchResponse]) error {
	ctx := stream.Context()
	var last []*v1beta1.Device
	for {
		// Take the wake-up channel before reading, so a change between the
		// read and the wait is not missed.
		wake := s.changed.wait()
		cur := s.kubeletDevices()
		if last == nil || !sameDevices(cur, last) {
			if err := stream.Send(&v1beta1.ListAndWatchResponse{Devices: cur}); err != nil {
				return fmt.Errorf("send device list for %s: %w", s.resource, err)
			}
			s.log.WithField("devices", len(cur)).Debug("device list sent")
			last = cur
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		}
	}
}

// kubeletDevices is the inventory's list in the kubelet's terms, sorted by ID.
func (s *service) kubeletDevices() []*v1beta1.Device {
	devs := s.inv.Devices(s.profile)
	out := make([]*v1beta1.Device, 0, len(devs))
	for _, d := range devs {
		h := v1beta1.Healthy
		if !d.Healthy {
			h = v1beta1.Unhealthy
		}
		out = append(out, &v1beta1.Device{ID: d.ID, Health: h})
	}
	slices.SortFunc(out, func(a, b *v1beta1.Device) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func sameDevices(a, b []*v1beta1.Device) bool {
	return slices.EqualFunc(a, b, func(x, y *v1beta1.Device) bool { return x.ID == y.ID && x.Health == y.Health })
}

// Allocate implements v1beta1.DevicePluginServer.
func (s *service) Allocate(ctx context.Context, req *v1beta1.AllocateRequest) (resp *v1beta1.AllocateResponse, err error) {
	if s.observe != nil {
		start := time.Now()
		defer func() { s.observe(s.resource, time.Since(start), err) }()
	}
	known := s.inv.Devices(s.profile)
	resp = &v1beta1.AllocateResponse{ContainerResponses: make([]*v1beta1.ContainerAllocateResponse, 0, len(req.GetContainerRequests()))}
	for _, cr := range req.GetContainerRequests() {
		ids := cr.GetDevicesIds()
		r, err := s.allocateOne(ctx, known, ids)
		if err != nil {
			s.log.WithField("devices", ids).WithError(err).Warn("allocation refused")
			return nil, err
		}
		resp.ContainerResponses = append(resp.ContainerResponses, r)
	}
	return resp, nil
}

func (s *service) allocateOne(ctx context.Context, known []Device, ids []string) (*v1beta1.ContainerAllocateResponse, error) {
	if len(ids) == 0 {
		return nil, status.Errorf(codes.InvalidArgument, "%s: allocation request names no device", s.resource)
	}
	r := &v1beta1.ContainerAllocateResponse{CdiDevices: make([]*v1beta1.CDIDevice, 0, len(ids))}
	for _, id := range ids {
		i := slices.IndexFunc(known, func(d Device) bool { return d.ID == id })
		if i < 0 {
			return nil, status.Errorf(codes.NotFound, "%s: device %q is not advertised on this node (unknown, or being destroyed)", s.resource, id)
		}
		d := known[i]
		if !d.Healthy {
			return nil, status.Errorf(codes.FailedPrecondition, "%s: device %q is unhealthy", s.resource, id)
		}
		if d.CDIName == "" {
			return nil, status.Errorf(codes.FailedPrecondition, "%s: device %q has no CDI spec", s.resource, id)
		}
		r.CdiDevices = append(r.CdiDevices, &v1beta1.CDIDevice{Name: d.CDIName})
	}
	if s.check != nil {
		if err := s.check(ctx, s.profile, slices.Clone(ids)); err != nil {
			if st, ok := status.FromError(err); ok {
				return nil, status.Errorf(st.Code(), "%s: %s", s.resource, st.Message())
			}
			return nil, status.Errorf(codes.FailedPrecondition, "%s: allocation of %s refused: %v", s.resource, strings.Join(ids, ","), err)
		}
	}
	visible := strings.Join(ids, ",")
	r.Envs = map[string]string{envNvidiaVisibleDevices: visible, envCudaVisibleDevices: visible}
	return r, nil
}

// GetPreferredAllocation implements v1beta1.DevicePluginServer.
func (s *service) GetPreferredAllocation(_ context.Context, req *v1beta1.PreferredAllocationRequest) (*v1beta1.PreferredAllocationResponse, error) {
	resp := &v1beta1.PreferredAllocationResponse{}
	for _, cr := range req.GetContainerRequests() {
		avail, must, size := cr.GetAvailableDeviceIDs(), cr.GetMustIncludeDeviceIDs(), int(cr.GetAllocationSize())
		if size < 0 || size > len(avail) {
			return nil, status.Errorf(codes.InvalidArgument, "%s: preferred allocation of %d from %d available devices", s.resource, size, len(avail))
		}
		got := s.prefer(s.profile, slices.Clone(avail), slices.Clone(must), size)
		if !validPreference(got, avail, must, size) {
			s.log.WithField("preferred", got).Warn("preference broke the request's rules; using the default")
			got = DefaultPreference(s.profile, avail, must, size)
		}
		resp.ContainerResponses = append(resp.ContainerResponses, &v1beta1.ContainerPreferredAllocationResponse{DeviceIDs: got})
	}
	return resp, nil
}
