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
	in, plan, err := a.part.Allocate(ctx, req.Profile, owner)
	if errors.Is(err, partitioner.ErrMustWait) {
		a.localWaiting(owner, req.Profile)
	}
	if err != nil {
		return client.AllocResponse{}, err
	}
	a.localServed(owner, req.Profile)
	if err := a.persist(); err != nil {
		// Unrecorded means unsafe to hand out: give it back.
		a.part.Release(in.UUID)
		return client.AllocResponse{}, fmt.Errorf("alloc %s: %w", req.Profile, err)
	}
	name, _ := a.cdiName(in.UUID)
	a.log.WithFields(logrus.Fields{"uuid": in.UUID, "profile": in.Profile, "gpu": in.GPU, "owner": owner, "plan": plan.String()}).Info("allocated")
	return client.AllocResponse{UUID: in.UUID, CDIName: name, Profile: in.Profile, GPU: in.GPU,
		Start: in.Placement.Start, Size: in.Placement.Size, Steps: len(plan.Steps)}, nil
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
func (a *Agent) Free(ctx context.Context, name string) error {
	uuid := name
	if _, dev, ok := strings.Cut(name, "="); ok {
		uuid = a.uuidOfCDIDevice(dev)
	}
	in, err := a.part.Find(uuid)
	if err != nil {
		return fmt.Errorf("free %s: %w", name, err)
	}
	if in.State == partitioner.InUse && !strings.HasPrefix(in.Owner, ownerLocal) {
		return fmt.Errorf("free %s: held by %s, not by a local user: %w", name, in.Owner, partitioner.ErrInstanceInUse)
	}
	if _, err := a.part.Release(uuid); err != nil {
		return fmt.Errorf("free %s: %w", name, err)
	}
	if err := a.persist(); err != nil {
		return fmt.Errorf("free %s: %w", name, err)
	}
	if err := a.part.Destroy(ctx, uuid); err != nil {
		return fmt.Errorf("free %s: released, but not destroyed: %w", name, err)
	}
	return nil
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
