package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sirupsen/logrus"

	"github.com/migpro/migpro/client"
	"github.com/migpro/migpro/partitioner"
)

// ownerLocal prefixes holders that came through the local API.
const ownerLocal = "local"

// Alloc gives an instance of a profile to a local user (podman, containerd),
// creating it if needed, and checkpoints the holder before answering.
func (a *Agent) Alloc(ctx context.Context, req client.AllocRequest) (client.AllocResponse, error) {
	if req.Profile == "" {
		return client.AllocResponse{}, fmt.Errorf("alloc: no profile given: %w", partitioner.ErrUnknownProfile)
	}
	if err := validOwner(req.Owner); err != nil {
		return client.AllocResponse{}, err
	}
	owner := ownerLocal
	if req.Owner != "" {
		owner += ":" + req.Owner
	}
	allocate := a.part.Allocate
	if req.Larger {
		allocate = func(ctx context.Context, profile, owner string) (partitioner.Instance, partitioner.Plan, error) {
			return a.part.AllocateHolding(ctx, profile, nil, owner)
		}
	}
	in, plan, err := allocate(ctx, req.Profile, owner)
	if errors.Is(err, partitioner.ErrMustWait) {
		a.localWaiting(owner, req.Profile)
	}
	if err != nil {
		return client.AllocResponse{}, err
	}
	a.localServed(owner, req.Profile)
	lease, err := newLease()
	if err == nil {
		a.ckpt.setLease(in.UUID, lease)
		err = a.persist()
	}
	if err != nil {
		// Unrecorded means unsafe to hand out: give it back.
		a.ckpt.setLease(in.UUID, "")
		a.part.Release(in.UUID)
		return client.AllocResponse{}, fmt.Errorf("alloc %s: %w", req.Profile, err)
	}
	name, _ := a.cdiName(in.UUID)
	a.log.WithFields(logrus.Fields{"uuid": in.UUID, "profile": in.Profile, "gpu": in.GPU, "owner": owner, "plan": plan.String()}).Info("allocated")
	return client.AllocResponse{UUID: in.UUID, CDIName: name, Profile: in.Profile, GPU: in.GPU,
		Placement: wirePlacement(in.Placement), Steps: len(plan.Steps), Lease: lease}, nil
}

// errBadRequest marks a request the local API refuses as malformed (400).
var errBadRequest = errors.New("bad request")

// maxOwner bounds an owner label: it is shown in status pictures and logs.
const maxOwner = 128

// validOwner refuses owners that could forge lines or pictures where they
// are printed (`migctl status`, logs): control characters (newlines
// included), invalid UTF-8, and over-long labels.
func validOwner(owner string) error {
	if len(owner) > maxOwner {
		return fmt.Errorf("alloc: owner is %d bytes, at most %d: %w", len(owner), maxOwner, errBadRequest)
	}
	if !utf8.ValidString(owner) {
		return fmt.Errorf("alloc: owner %q is not UTF-8: %w", owner, errBadRequest)
	}
	for _, r := range owner {
		if unicode.IsControl(r) || (!unicode.IsPrint(r) && r != ' ') {
			return fmt.Errorf("alloc: owner %q contains a control or non-printing character: %w", owner, errBadRequest)
		}
	}
	return nil
}

// Free releases a locally held instance and destroys it, removing its spec.
// Instances the kubelet holds are refused: they go back when their pod ends.
// It is the FreeLease of no lease: whoever holds the instance locally loses it.
func (a *Agent) Free(ctx context.Context, name string) error { return a.FreeLease(ctx, name, "") }

// FreeLease releases a locally held instance, all or nothing: the checkpoint
// without it is saved first, and only then is it released, so a failed free
// (a full disk) leaves it held and an error, never released behind an error
// that invites a retry. With a lease (from the alloc's answer) the free is
// idempotent for that holder: once the instance is no longer held under that
// lease (freed already, then maybe given to someone else) it does nothing.
// Destroying the released instance is housekeeping: a failure there is
// logged, and the free has still happened.
func (a *Agent) FreeLease(ctx context.Context, name, lease string) error {
	uuid := name
	if _, dev, ok := strings.Cut(name, "="); ok {
		uuid = a.uuidOfCDIDevice(dev)
	}
	released, err := a.release(name, uuid, lease)
	if err != nil || !released {
		return err
	}
	if err := a.part.Destroy(ctx, uuid); err != nil {
		a.log.WithError(err).WithField("uuid", uuid).Warn("free: released, but not destroyed; it stays idle")
	}
	return nil
}

// release is the free's decision and its effect, under persistMu so no
// other checkpoint write can come between them. It reports whether there
// is an instance to destroy.
func (a *Agent) release(name, uuid, lease string) (bool, error) {
	a.persistMu.Lock()
	defer a.persistMu.Unlock()
	in, err := a.part.Find(uuid)
	if err != nil {
		if lease != "" && errors.Is(err, partitioner.ErrUnknownInstance) {
			return false, nil // freed and destroyed already
		}
		return false, fmt.Errorf("free %s: %w", name, err)
	}
	if lease != "" && (in.State != partitioner.InUse || a.ckpt.lease(uuid) != lease) {
		return false, nil // this holder freed it already
	}
	if in.State == partitioner.InUse && !strings.HasPrefix(in.Owner, ownerLocal) {
		return false, fmt.Errorf("free %s: held by %s, not by a local user: %w", name, in.Owner, partitioner.ErrInstanceInUse)
	}
	if in.State == partitioner.InUse {
		if err := a.persistExcept(uuid); err != nil {
			return false, fmt.Errorf("free %s: nothing released: %w", name, err)
		}
		// Nothing else releases a local holding, and persistMu keeps other
		// frees out: it is still ours to release.
		if _, err := a.part.Release(uuid); err != nil {
			return false, fmt.Errorf("free %s: %w", name, err)
		}
		a.ckpt.setLease(uuid, "")
	}
	return true, nil
}

// uuidOfCDIDevice maps a CDI device name back to its MIG UUID.
func (a *Agent) uuidOfCDIDevice(dev string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	for uuid, qualified := range a.cdiNames {
		if strings.HasSuffix(qualified, "="+dev) {
			return uuid
		}
	}
	return dev
}

// Status describes every GPU and instance.
func (a *Agent) Status() client.Status {
	st := client.Status{GPUs: wireGPUs(a.part.GPUs()), Pending: a.PendingDemand(), Reserved: wireReservation(a.reservationStatus())}
	insts := a.part.Instances()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, in := range insts {
		si := wireInstance(in)
		si.CDIName, si.Healthy = a.cdiNames[in.UUID], a.healthyLocked(in)
		if p, ok := a.podOf[in.UUID]; ok {
			si.Pod = p.String()
		}
		st.Instances = append(st.Instances, si)
	}
	return st
}
