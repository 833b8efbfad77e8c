package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"

	"github.com/migpro/migpro/estimator"
	"github.com/migpro/migpro/predictor"
)

// Instance is a MIG instance the agent gave to the run.
type Instance struct {
	UUID    string
	CDIName string // the qualified CDI device name to start the container with
	Profile string
}

// Usage is a container's GPU memory as the agent last saw it.
type Usage struct {
	Current, Capacity uint64
}

// Agent is what the runner needs from the migpro agent.
type Agent interface {
	// Alloc gets an instance of profile, held by owner.
	Alloc(ctx context.Context, profile, owner string) (Instance, error)
	// Free releases and destroys an instance by CDI name or UUID.
	Free(ctx context.Context, name string) error
	// Marks returns the predictor's marks by container id.
	Marks(ctx context.Context) (map[string]predictor.Mark, error)
	// Usage returns a registered container's memory; ok is false when the
	// agent does not know it.
	Usage(ctx context.Context, id string) (u Usage, ok bool, err error)
	// Profiles lists the profiles the node offers.
	Profiles(ctx context.Context) ([]string, error)
}

// Container is what to start: the same image and command on every run, a
// new id and device each time.
type Container struct {
	ID     string
	Image  string
	Args   []string // the whole command; empty keeps the image's
	Env    []string
	Device string // qualified CDI device name
}

// Exit is how a container's task ended.
type Exit struct {
	Code int
	Err  error // the engine could not tell the exit status
}

// Engine runs containers.
type Engine interface {
	// Prepare makes the image ready to run (present and unpacked), so a bad
	// image fails before any instance is taken.
	Prepare(ctx context.Context, image string) error
	// Start creates the container and starts its task, streaming its output.
	// The channel receives the task's exit exactly once.
	Start(ctx context.Context, c Container) (<-chan Exit, error)
	// Kill signals the container's task; a task that already exited is not
	// an error.
	Kill(ctx context.Context, id string, sig syscall.Signal) error
	// Remove deletes the task, killing it if it still runs, and the
	// container with its snapshot. A container that does not exist is not
	// an error.
	Remove(ctx context.Context, id string) error
}

// Config is one `migpro-lab run`.
type Config struct {
	// ID names the first container, and the holder of its instances; a
	// restart n runs as ID-rn.
	ID      string
	Image   string
	Args    []string
	Env     []string
	Profile string
	// MaxRestarts bounds the restarts on a larger instance (0: none).
	MaxRestarts int
	// Poll is how often the agent's marks are read. Default 500ms.
	Poll time.Duration
	// StopTimeout is how long a container gets after SIGTERM before
	// SIGKILL, on a restart or an interrupt. Default 10s.
	StopTimeout time.Duration
	// Log receives the runner's own one-line messages (not the container's
	// output). Default io.Discard.
	Log io.Writer
}

// Result is how a run ended.
type Result struct {
	// Code is the exit code of the last container.
	Code int
	// Restarts is how many times it was restarted on a larger instance.
	Restarts int
	// Profile is the profile of the last instance.
	Profile string
}

// ErrInterrupted is returned when the run's context ends (SIGINT, SIGTERM):
// the container was stopped and its instance freed.
var ErrInterrupted = errors.New("interrupted")

// Runner runs one Config.
type Runner struct {
	agent  Agent
	engine Engine
	cfg    Config
}

// New checks cfg and returns a runner.
func New(a Agent, e Engine, cfg Config) (*Runner, error) {
	switch {
	case cfg.ID == "":
		return nil, errors.New("runner: no container id")
	case cfg.Image == "":
		return nil, errors.New("runner: no image")
	case cfg.Profile == "":
		return nil, errors.New("runner: no profile")
	case cfg.MaxRestarts < 0 || cfg.Poll < 0 || cfg.StopTimeout < 0:
		return nil, fmt.Errorf("runner: negative max restarts, poll or stop timeout in %+v", cfg)
	}
	if cfg.Poll == 0 {
		cfg.Poll = 500 * time.Millisecond
	}
	if cfg.StopTimeout == 0 {
		cfg.StopTimeout = 10 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	return &Runner{agent: a, engine: e, cfg: cfg}, nil
}

// cleanupTimeout bounds the clean-up after the run's context has ended.
const cleanupTimeout = 30 * time.Second

// Run runs the container until it exits, restarting it on a larger instance
// on each mark while restarts are left. Whatever happens, the containers it
// made are removed and the instances it took are freed before it returns.
// The error is nil when the container ran and exited, whatever its code.
func (r *Runner) Run(ctx context.Context) (Result, error) {
	if err := r.engine.Prepare(ctx, r.cfg.Image); err != nil {
		return Result{}, fmt.Errorf("image %s: %w", r.cfg.Image, err)
	}
	res := Result{Profile: r.cfg.Profile}
	for {
		id := r.cfg.ID
		if res.Restarts > 0 {
			id = fmt.Sprintf("%s-r%d", r.cfg.ID, res.Restarts)
		}
		next, err := r.once(ctx, id, &res)
		if err != nil || next == "" {
			return res, err
		}
		res.Profile = next
		res.Restarts++
	}
}

// once runs one container on a new instance of res.Profile, and always
// removes the container and frees the instance before it returns. It returns
// the profile to restart on, empty when the run is over.
func (r *Runner) once(ctx context.Context, id string, res *Result) (string, error) {
	in, err := r.agent.Alloc(ctx, res.Profile, r.cfg.ID)
	if err != nil {
		if res.Restarts > 0 {
			return "", fmt.Errorf("restart on %s: %w", res.Profile, err)
		}
		return "", err
	}
	started := false
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if started {
			if rerr := r.engine.Remove(cctx, id); rerr != nil {
				r.logf("remove container %s: %v", id, rerr)
			}
		}
		if ferr := r.agent.Free(cctx, in.CDIName); ferr != nil {
			r.logf("free instance %s (%s): %v", in.CDIName, in.Profile, ferr)
		}
	}()
	exitC, err := r.engine.Start(ctx, Container{ID: id, Image: r.cfg.Image, Args: r.cfg.Args, Env: r.cfg.Env, Device: in.CDIName})
	// A failed Start removes what it made itself: removing by id here could
	// delete someone else's container that holds the id.
	started = err == nil
	if err != nil {
		return "", fmt.Errorf("start container %s on %s: %w", id, in.Profile, err)
	}
	r.logf("started %s on %s (%s)", id, in.Profile, in.CDIName)
	return r.watch(ctx, id, in, exitC, res)
}

// watch waits for the container's exit while reading the agent's marks.
func (r *Runner) watch(ctx context.Context, id string, in Instance, exitC <-chan Exit, res *Result) (string, error) {
	tick := time.NewTicker(r.cfg.Poll)
	defer tick.Stop()
	var marksErr error // the last failure, reported once per streak
	decided := false   // a mark was seen and answered: later polls change nothing
	for {
		select {
		case ex := <-exitC:
			return "", r.exited(id, ex, res)
		case <-ctx.Done():
			r.logf("interrupted: stopping %s", id)
			ex := r.stop(ctx, id, exitC)
			res.Code = ex.Code
			return "", ErrInterrupted
		case <-tick.C:
		}
		if decided {
			continue
		}
		marks, err := r.agent.Marks(ctx)
		if err != nil {
			if marksErr == nil {
				r.logf("cannot read the agent's predictions (the container keeps running): %v", err)
			}
			marksErr = err
			continue
		}
		if marksErr != nil {
			r.logf("reading the agent's predictions again")
			marksErr = nil
		}
		d, ok := marks[id]
		if !ok {
			continue
		}
		decided = true
		select {
		case ex := <-exitC: // it ended meanwhile: nothing to restart
			return "", r.exited(id, ex, res)
		default:
		}
		next, why := r.nextProfile(ctx, in.Profile, d, res.Restarts)
		what := r.describe(ctx, id, in.Profile, d)
		if next == "" {
			r.logf("%s: %s; letting it run", what, why)
			continue
		}
		r.logf("%s: restarting on %s (restart %d of %d)", what, next, res.Restarts+1, r.cfg.MaxRestarts)
		r.stop(ctx, id, exitC)
		return next, nil
	}
}

// exited records a container's exit.
func (r *Runner) exited(id string, ex Exit, res *Result) error {
	if ex.Err != nil {
		return fmt.Errorf("container %s: %w", id, ex.Err)
	}
	res.Code = ex.Code
	return nil
}

// nextProfile picks the profile to restart on, or says why there is none.
func (r *Runner) nextProfile(ctx context.Context, current string, d predictor.Mark, restarts int) (string, string) {
	if restarts >= r.cfg.MaxRestarts {
		return "", fmt.Sprintf("no restarts left (--max-restarts %d)", r.cfg.MaxRestarts)
	}
	next := d.Profile
	if next == "" {
		offered, err := r.agent.Profiles(ctx)
		if err != nil {
			return "", fmt.Sprintf("no recommended profile, and the node's profiles are unknown: %v", err)
		}
		if next = NextLarger(current, offered); next == "" {
			return "", fmt.Sprintf("no recommended profile, and nothing on this node is larger than %s", current)
		}
	}
	if next == current {
		return "", fmt.Sprintf("%s is already the largest profile the forecast could use", current)
	}
	return next, ""
}

// describe is the first half of the mark's line: how full the instance is
// and what the predictor expects.
func (r *Runner) describe(ctx context.Context, id, profile string, d predictor.Mark) string {
	s := "predicted out of memory on " + profile
	var detail []string
	if u, ok, err := r.agent.Usage(ctx, id); err == nil && ok && u.Capacity > 0 {
		s = fmt.Sprintf("predicted out of memory at %.0f%% of %s", 100*float64(u.Current)/float64(u.Capacity), profile)
		detail = append(detail, fmt.Sprintf("%s of %s used", estimator.FormatBytes(u.Current), estimator.FormatBytes(u.Capacity)))
	}
	if d.Forecast > 0 {
		detail = append(detail, "forecast "+estimator.FormatBytes(d.Forecast))
	}
	if d.TimeToOOM > 0 {
		detail = append(detail, fmt.Sprintf("out of memory in about %s", time.Duration(d.TimeToOOM*float64(time.Second)).Round(100*time.Millisecond)))
	}
	if len(detail) > 0 {
		s += " (" + strings.Join(detail, ", ") + ")"
	}
	return s
}

// stop asks the task to end with SIGTERM, then kills it after StopTimeout,
// and returns its exit. Removal is left to once's clean-up.
func (r *Runner) stop(ctx context.Context, id string, exitC <-chan Exit) Exit {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.StopTimeout+2*cleanupTimeout)
	defer cancel()
	if err := r.engine.Kill(ctx, id, syscall.SIGTERM); err != nil {
		r.logf("SIGTERM %s: %v", id, err)
	}
	t := time.NewTimer(r.cfg.StopTimeout)
	defer t.Stop()
	select {
	case ex := <-exitC:
		return ex
	case <-t.C:
	}
	r.logf("%s did not stop within %s: SIGKILL", id, r.cfg.StopTimeout)
	if err := r.engine.Kill(ctx, id, syscall.SIGKILL); err != nil {
		r.logf("SIGKILL %s: %v", id, err)
	}
	t.Reset(cleanupTimeout)
	select {
	case ex := <-exitC:
		return ex
	case <-t.C:
		return Exit{Code: -1, Err: fmt.Errorf("%s still running %s after SIGKILL", id, cleanupTimeout)}
	}
}

func (r *Runner) logf(format string, args ...any) {
	fmt.Fprintf(r.cfg.Log, "migpro-lab run: "+format+"\n", args...)
}
