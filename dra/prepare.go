package dra

import (
	"context"
	"errors"
	"fmt"

	"github.com/sirupsen/logrus"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/migpro/migpro/partitioner"
)

// PrepareResourceClaims makes or reuses the instance of every device the
// scheduler allocated to each claim, at exactly its placement, and answers
// with the instances' CDI names. A claim prepared before (a kubelet retry,
// or an agent restart in between) gets the same instances back.
func (d *Driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, c := range claims {
		out[c.UID] = d.prepare(ctx, c)
	}
	return out, nil
}

func (d *Driver) prepare(ctx context.Context, c *resourceapi.ResourceClaim) kubeletplugin.PrepareResult {
	if c.Status.Allocation == nil {
		return kubeletplugin.PrepareResult{Err: fmt.Errorf("claim %s/%s is not allocated", c.Namespace, c.Name)}
	}
	var res kubeletplugin.PrepareResult
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver != DriverName {
			continue
		}
		if r.Pool != d.nodeName {
			return kubeletplugin.PrepareResult{Err: fmt.Errorf("claim %s/%s: device %s is in pool %s, not this node's (%s)", c.Namespace, c.Name, r.Device, r.Pool, d.nodeName)}
		}
		p, ok := d.byName[r.Device]
		if !ok {
			return kubeletplugin.PrepareResult{Err: fmt.Errorf("claim %s/%s: no device %s on this node", c.Namespace, c.Name, r.Device)}
		}
		who := owner(string(c.UID), r.Device)
		first, preferred, pref := d.preferred(who, p)
		in, cdiName, err := d.b.PrepareAt(ctx, p.profile.Name, p.pin(), who)
		if errors.Is(err, partitioner.ErrMustWait) {
			err = fmt.Errorf("%w (the slice the scheduler read was stale: another holder took the space; the kubelet retries once it is released)", err)
		}
		if err != nil {
			return kubeletplugin.PrepareResult{Err: fmt.Errorf("claim %s/%s: %w", c.Namespace, c.Name, err)}
		}
		if cdiName == "" {
			return kubeletplugin.PrepareResult{Err: fmt.Errorf("claim %s/%s: instance %s has no CDI spec", c.Namespace, c.Name, in.UUID)}
		}
		log := d.log.WithFields(logrus.Fields{"claim": c.Namespace + "/" + c.Name, "device": r.Device, "uuid": in.UUID})
		if first {
			d.metrics.prepared.Inc()
			log = log.WithField("preferred", preferred)
			if !preferred {
				d.metrics.notPreferred.Inc()
				log.WithField("migpro_preference", pref).Info("DRA: the scheduler allocated a placement other than migpro's preference (a stale slice); the instance is made where it allocated")
			}
		}
		log.Info("DRA: prepared")
		res.Devices = append(res.Devices, kubeletplugin.Device{Requests: []string{r.Request}, PoolName: r.Pool, DeviceName: r.Device, CDIDeviceIDs: []string{cdiName}})
	}
	return res
}

// preferred reports, before a device is prepared for holder, whether this
// is its first Prepare (a repeated one is not judged again), and whether
// the allocated placement is migpro's first preference for the profile at
// this moment: the instance the partitioner would reuse or the placement it
// would create for the profile's next request, which is what the first
// published device of the profile offers once the slices are current. pref
// names that preference ("none": the partitioner would wait).
func (d *Driver) preferred(holder string, p placement) (first, preferred bool, pref string) {
	part := d.b.Partitioner()
	for _, in := range part.Instances() {
		if in.Owner == holder {
			return false, false, ""
		}
	}
	pin, ok := chosenPin(state{best: part.Plan}, p.profile.Name)
	if !ok {
		return true, false, "none"
	}
	return true, pin == p.pin(), deviceName(pin.GPU, p.profile.Name, pin.Start)
}

// UnprepareResourceClaims returns each claim's instances to the idle pool.
// It needs only the claim's UID: the agent's checkpoint names the holder. A
// claim with nothing prepared is already done.
func (d *Driver) UnprepareResourceClaims(_ context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := make(map[types.UID]error, len(claims))
	for _, c := range claims {
		released, err := d.b.ReleaseOwners(ownerPrefix + string(c.UID) + ":")
		out[c.UID] = err
		if err == nil && len(released) > 0 {
			d.log.WithFields(logrus.Fields{"claim": c.String(), "instances": len(released)}).Info("DRA: unprepared")
		}
	}
	return out, nil
}
