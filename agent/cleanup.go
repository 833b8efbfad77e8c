package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/sirupsen/logrus"

	"github.com/migpro/migpro/partitioner"
)

// CleanupReport is what Cleanup did.
type CleanupReport struct {
	// Destroyed are the idle instances destroyed, by MIG UUID.
	Destroyed []string
	// Left are the instances still in use, left as they are.
	Left []partitioner.Instance
	// SpecsRemoved counts the migpro CDI specs removed.
	SpecsRemoved int
}

// Cleanup undoes what the agent made, for an uninstall: every idle instance
// is destroyed and every CDI spec of the agent's kind is removed. Instances
// in use are left (destroying them would kill a workload) and reported; a
// runtime needs their spec only to start a container, so a running one is
// not disturbed. Run calls it on exit when Config.CleanupOnExit is set; it
// must not run while Run serves.
func (a *Agent) Cleanup(ctx context.Context) (CleanupReport, error) {
	var rep CleanupReport
	var errs []error
	for _, in := range a.part.Instances() {
		if in.State != partitioner.Idle {
			rep.Left = append(rep.Left, in)
			continue
		}
		if err := a.part.Destroy(ctx, in.UUID); err != nil {
			if errors.Is(err, partitioner.ErrInstanceInUse) {
				rep.Left = append(rep.Left, in)
				continue
			}
			errs = append(errs, err)
			continue
		}
		rep.Destroyed = append(rep.Destroyed, in.UUID)
	}
	specs, err := a.cdi.List()
	if err != nil {
		errs = append(errs, err)
	}
	for _, s := range specs {
		if err := a.cdi.Remove(s.UUID); err != nil {
			errs = append(errs, err)
			continue
		}
		rep.SpecsRemoved++
	}
	if err := a.persist(); err != nil {
		errs = append(errs, err)
	}
	for _, in := range rep.Left {
		a.log.WithFields(logrus.Fields{"uuid": in.UUID, "profile": in.Profile, "gpu": in.GPU, "owner": in.Owner, "pod": a.podName(in.UUID)}).
			Warn("cleanup: instance in use, left in place; destroy it with nvidia-smi once its workload ends")
	}
	a.log.WithFields(logrus.Fields{"destroyed": len(rep.Destroyed), "left_in_use": len(rep.Left), "specs_removed": rep.SpecsRemoved}).Info("cleanup done")
	if len(errs) > 0 {
		return rep, fmt.Errorf("cleanup: %w", errors.Join(errs...))
	}
	return rep, nil
}

func (a *Agent) podName(uuid string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if p, ok := a.podOf[uuid]; ok {
		return p.String()
	}
	return ""
}

func (a *Agent) cleanup(ctx context.Context) error {
	_, err := a.Cleanup(ctx)
	return err
}
