package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	specs "tags.cncf.io/container-device-interface/specs-go"

	"github.com/migpro/migpro/cdi"
	"github.com/migpro/migpro/hook"
	"github.com/migpro/migpro/partitioner"
)

// ownerKubelet marks instances the kubelet allocated; PodResources later
// says to which pod.
const ownerKubelet = "kubelet"

func (a *Agent) cdiOptions() ([]cdi.Option, error) {
	opts := []cdi.Option{cdi.WithSpecDir(a.cfg.CDISpecDir), cdi.WithKind(a.cfg.CDIKind), cdi.WithLogger(a.log)}
	if a.cfg.HookPath != "" {
		if err := shimUsable(a.cfg.ShimPath); err != nil {
			// A spec that mounts a missing file fails every container on
			// the instance: leave telemetry out, loudly.
			a.log.WithError(err).Error("telemetry shim unusable: CDI specs carry no telemetry hook or shim; containers run without telemetry")
		} else {
			// Each spec's hook names its instance: the container is
			// registered with the instances its specs gave it.
			opts = append(opts, cdi.WithInstanceEdits(func(i cdi.Instance) specs.ContainerEdits {
				uuid := i.UUID
				if !strings.HasPrefix(uuid, "MIG-") {
					uuid = "MIG-" + uuid // as the spec's env names it
				}
				return toCDIEdits(hook.CDIEdits(hook.EditsConfig{HookPath: a.cfg.HookPath, ShimPath: a.cfg.ShimPath,
					AgentSocket: a.cfg.Socket, LogFile: a.cfg.HookLog, Instance: uuid}))
			}))
		}
	}
	d, err := a.cdiDriver()
	if err != nil {
		return nil, err
	}
	if d != nil {
		opts = append(opts, cdi.WithDriver(d))
		if a.gpu.DriverEdits != nil {
			opts = append(opts, cdi.WithExtraEdits(*a.gpu.DriverEdits))
		}
	}
	return opts, nil
}

// shimUsable checks the shim the specs will mount (the default path when
// none is configured): it must be a regular file.
func shimUsable(path string) error {
	if path == "" {
		path = hook.DefaultShimPath
	}
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		if _, derr := os.Stat(filepath.Dir(path)); derr != nil {
			// The agent cannot see that directory (it runs in a container
			// that does not mount it): it cannot tell, so it trusts.
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("shim %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("shim %s is not a regular file", path)
	}
	return nil
}

// toCDIEdits turns the hook package's plain description into CDI edits.
func toCDIEdits(e hook.Edits) specs.ContainerEdits {
	out := specs.ContainerEdits{Env: append([]string(nil), e.Env...)}
	for _, m := range e.Mounts {
		out.Mounts = append(out.Mounts, &specs.Mount{HostPath: m.HostPath, ContainerPath: m.ContainerPath, Options: m.Options})
	}
	for _, h := range e.Hooks {
		out.Hooks = append(out.Hooks, &specs.Hook{HookName: h.Stage, Path: h.Path, Args: h.Args, Env: h.Env})
	}
	return out
}

// writeSpec writes an instance's CDI spec and remembers its name.
func (a *Agent) writeSpec(in partitioner.Instance) error {
	dev, ok := a.part.Device(in.GPU)
	if !ok {
		return fmt.Errorf("write CDI spec for %s: no GPU %d", in.UUID, in.GPU)
	}
	name, err := a.cdi.Write(cdi.Instance{UUID: in.UUID, GPUIndex: in.GPU, GPUMinor: dev.Minor(), GIID: in.GIID, CIID: in.CIID, Profile: in.Profile}, a.specPaths())
	if err != nil {
		return fmt.Errorf("write CDI spec for %s: %w", in.UUID, err)
	}
	a.mu.Lock()
	a.cdiNames[in.UUID] = name
	a.mu.Unlock()
	return nil
}

// afterCreate runs inside the partitioner's plan, before the instance is
// recorded: the spec exists before anything can advertise the instance.
func (a *Agent) afterCreate(in partitioner.Instance) error {
	if err := a.writeSpec(in); err != nil {
		return err
	}
	a.mu.Lock()
	a.idleSince[in.UUID] = time.Now()
	a.mu.Unlock()
	return nil
}

// afterDestroy removes the spec once the instance is gone from the GPU.
func (a *Agent) afterDestroy(in partitioner.Instance) {
	if in.UUID == "" {
		return
	}
	if err := a.cdi.Remove(in.UUID); err != nil {
		a.log.WithError(err).WithField("uuid", in.UUID).Error("remove CDI spec")
	}
	a.mu.Lock()
	delete(a.cdiNames, in.UUID)
	delete(a.idleSince, in.UUID)
	delete(a.unhealthy, in.UUID)
	delete(a.podOf, in.UUID)
	a.mu.Unlock()
}

// busy is the partitioner's last check before destroying an idle instance:
// the instance is already withdrawn from ListAndWatch (it is Destroying), so
// the kubelet can no longer pick it; PodResources must not list it either.
func (a *Agent) busy(ctx context.Context, in partitioner.Instance) (bool, error) {
	assigned, err := a.assigned(ctx)
	if err != nil {
		// Unknown is not unused: refuse to destroy.
		return true, fmt.Errorf("ask the kubelet which devices are assigned: %w", err)
	}
	_, used := assigned[in.UUID]
	return used, nil
}

// allocateCheck runs when the kubelet allocates devices to a container: each
// must still be idle or already ours, and is checkpointed as in use before
// the kubelet hears yes.
func (a *Agent) allocateCheck(_ context.Context, profile string, ids []string) error {
	// taken is what this call moved from idle to in use: on a refusal only
	// those go back, never an instance the kubelet already held before.
	var taken []string
	undo := func() {
		for _, t := range taken {
			a.part.Release(t)
		}
	}
	for _, id := range ids {
		before, err := a.part.Find(id)
		if err != nil {
			undo()
			return fmt.Errorf("allocate %s: %w", id, err)
		}
		if before.Profile != profile {
			undo()
			return fmt.Errorf("allocate %s: it is a %s, not a %s", id, before.Profile, profile)
		}
		if _, err := a.part.Assign(id, ownerKubelet); err != nil {
			undo()
			return fmt.Errorf("allocate %s: %w", id, err)
		}
		if before.State != partitioner.InUse {
			taken = append(taken, id)
		}
	}
	return a.persist()
}

// prefer answers GetPreferredAllocation with the instances whose reuse keeps
// the most layouts reachable, as the partitioner's reuse rule ranks them.
func (a *Agent) prefer(profile string, available, mustInclude []string, size int) []string {
	ranked := a.part.RankReuse(profile, available)
	out := append([]string(nil), mustInclude...)
	for _, id := range ranked {
		if len(out) >= size {
			break
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// persist checkpoints who holds every in-use instance. It runs before an
// allocation is acknowledged, so a crash never forgets a holder it told
// anyone about. Snapshot and save happen under persistMu: two persists
// saving out of order would leave the older snapshot on disk, without a
// holder the newer one had already acknowledged.
func (a *Agent) persist() error {
	a.persistMu.Lock()
	defer a.persistMu.Unlock()
	return a.persistExcept("")
}

// persistExcept saves every in-use instance but except (a free saves the
// checkpoint without its instance before releasing it). The caller holds
// persistMu.
func (a *Agent) persistExcept(except string) error {
	cp := Checkpoint{Holders: map[string]Holder{}}
	a.mu.Lock()
	old := a.holders
	a.mu.Unlock()
	for _, in := range a.part.Instances() {
		if in.State != partitioner.InUse || in.UUID == except {
			continue
		}
		h := Holder{Owner: in.Owner, Profile: in.Profile, Since: time.Now().UTC(), Lease: a.ckpt.lease(in.UUID)}
		if prev, ok := old[in.UUID]; ok && prev.Owner == in.Owner {
			h.Since = prev.Since
		}
		cp.Holders[in.UUID] = h
	}
	if err := a.ckpt.Save(cp); err != nil {
		return err
	}
	a.mu.Lock()
	a.holders = cp.Holders
	a.mu.Unlock()
	return nil
}
