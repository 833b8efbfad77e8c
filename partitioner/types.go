package partitioner

import (
	"errors"
	"fmt"
	"strings"

	"github.com/migpro/migpro/gpu"
)

// State is where an instance is in its life.
type State string

const (
	// Idle instances exist and are free: they can be reused or destroyed.
	Idle State = "idle"
	// InUse instances belong to an owner and are never destroyed.
	InUse State = "in-use"
	// Creating and Destroying mark instances a plan is working on; their
	// space counts as taken for every other decision.
	Creating   State = "creating"
	Destroying State = "destroying"
)

// Instance is the partitioner's record of one MIG instance.
type Instance struct {
	gpu.Instance
	Profile string
	State   State
	// Owner says who holds an in-use instance (an allocation, a pod, a
	// container); empty when idle.
	Owner string
}

func (i Instance) String() string {
	return fmt.Sprintf("%s on GPU %d at %s (gi %d, %s)", i.Profile, i.GPU, i.Placement, i.GIID, i.State)
}

// StepKind is one NVML action of a plan.
type StepKind string

const (
	StepDestroy StepKind = "destroy"
	StepCreate  StepKind = "create"
)

// Step is one action: destroy the instance GIID, or create Profile at Placement.
type Step struct {
	Kind      StepKind
	GPU       int
	Profile   string
	Placement gpu.Placement
	GIID      int // for destroy
}

func (s Step) String() string {
	if s.Kind == StepDestroy {
		return fmt.Sprintf("destroy %s on GPU %d at slot %d (gi %d)", s.Profile, s.GPU, s.Placement.Start, s.GIID)
	}
	return fmt.Sprintf("create %s on GPU %d at slot %d", s.Profile, s.GPU, s.Placement.Start)
}

// Plan is how one request is met: by reusing an idle instance (no steps), or
// by an explicit list of destroys followed by one create, all on one GPU.
type Plan struct {
	// Profile is the profile the plan reuses or makes; Asked, when set, is
	// the smaller profile the request named (WithLargerInstances).
	Profile string
	Asked   string
	GPU     int
	Reuse   *Instance // set when an idle instance is reused
	Steps   []Step
	// Reachable is how many layouts of the chosen GPU stay reachable after the
	// plan, and Before how many were reachable before.
	Reachable, Before int
	// Loss and GPULoss are the chosen candidate's mix-weighted losses
	// (Candidate.Loss, Candidate.GPULoss), for a caller choosing between
	// nodes.
	Loss, GPULoss float64
}

func (p Plan) String() string {
	if p.Reuse != nil {
		return "reuse " + p.Reuse.String()
	}
	parts := make([]string, len(p.Steps))
	for i, s := range p.Steps {
		parts[i] = s.String()
	}
	return strings.Join(parts, ", then ")
}

// Errors the partitioner returns; test with errors.Is.
var (
	// ErrMustWait means the request cannot be met now without touching an
	// in-use instance: the caller should queue it and try after a release.
	ErrMustWait = errors.New("no room: must wait for an instance to be released")
	// ErrUnknownProfile means no GPU on the node offers the profile.
	ErrUnknownProfile = errors.New("no GPU on this node offers the profile")
	// ErrUnknownInstance means no instance has that UUID.
	ErrUnknownInstance = errors.New("no such instance")
	// ErrInstanceInUse means an operation needed an idle instance.
	ErrInstanceInUse = errors.New("instance is in use")
)
