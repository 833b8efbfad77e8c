package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/migpro/migpro/predictor"
)

// journal records what the fakes were asked to do, in order.
type journal struct {
	mu  sync.Mutex
	log []string
}

func (j *journal) add(format string, args ...any) {
	j.mu.Lock()
	j.log = append(j.log, fmt.Sprintf(format, args...))
	j.mu.Unlock()
}

func (j *journal) entries() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.log...)
}

// fakeAgent hands out instances named dev0, dev1, … and serves the marks
// and usage a test sets.
type fakeAgent struct {
	j *journal

	mu       sync.Mutex
	next     int
	held     map[string]string // CDI name → profile
	marks    map[string]predictor.Mark
	usage    map[string]Usage
	allocErr map[string]error // by profile
	marksErr error
	reads    int // successful marks reads
	offered  []string
	onMarks  func() // runs inside each Marks call, unlocked
}

func newFakeAgent(j *journal) *fakeAgent {
	return &fakeAgent{j: j, held: map[string]string{}, marks: map[string]predictor.Mark{},
		usage: map[string]Usage{}, allocErr: map[string]error{}}
}

func (a *fakeAgent) Alloc(_ context.Context, profile, owner string) (Instance, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.j.add("alloc %s for %s", profile, owner)
	if err := a.allocErr[profile]; err != nil {
		return Instance{}, err
	}
	name := fmt.Sprintf("dev%d", a.next)
	a.next++
	a.held[name] = profile
	return Instance{UUID: "MIG-" + name, CDIName: name, Profile: profile}, nil
}

func (a *fakeAgent) Free(_ context.Context, name string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.j.add("free %s", name)
	if _, ok := a.held[name]; !ok {
		return fmt.Errorf("free %s: not held", name)
	}
	delete(a.held, name)
	return nil
}

func (a *fakeAgent) Marks(context.Context) (map[string]predictor.Mark, error) {
	if a.onMarks != nil {
		a.onMarks()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.marksErr != nil {
		return nil, a.marksErr
	}
	a.reads++
	out := map[string]predictor.Mark{}
	for k, v := range a.marks {
		out[k] = v
	}
	return out, nil
}

func (a *fakeAgent) Usage(_ context.Context, id string) (Usage, bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	u, ok := a.usage[id]
	return u, ok, nil
}

func (a *fakeAgent) Profiles(context.Context) ([]string, error) {
	if a.offered == nil {
		return nil, errors.New("no profile list")
	}
	return a.offered, nil
}

func (a *fakeAgent) mark(id string, d predictor.Mark) {
	a.mu.Lock()
	a.marks[id] = d
	a.mu.Unlock()
}

func (a *fakeAgent) holding() map[string]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]string{}
	for k, v := range a.held {
		out[k] = v
	}
	return out
}

// fakeEngine runs no process: a container "runs" until the test ends it
// with exit, or until a signal it does not ignore.
type fakeEngine struct {
	j *journal

	mu         sync.Mutex
	running    map[string]chan Exit
	started    chan Container
	ignoreTERM bool
	prepareErr error
	startErr   error
}

func newFakeEngine(j *journal) *fakeEngine {
	return &fakeEngine{j: j, running: map[string]chan Exit{}, started: make(chan Container, 16)}
}

func (e *fakeEngine) Prepare(_ context.Context, image string) error {
	e.j.add("prepare %s", image)
	return e.prepareErr
}

func (e *fakeEngine) Start(_ context.Context, c Container) (<-chan Exit, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.j.add("start %s on %s: %s", c.ID, c.Device, strings.Join(c.Args, " "))
	if e.startErr != nil {
		return nil, e.startErr
	}
	ch := make(chan Exit, 1)
	e.running[c.ID] = ch
	e.started <- c
	return ch, nil
}

// exit ends a running container with code, as its process would.
func (e *fakeEngine) exit(id string, code int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ch, ok := e.running[id]; ok {
		ch <- Exit{Code: code}
		delete(e.running, id)
	}
}

func (e *fakeEngine) Kill(_ context.Context, id string, sig syscall.Signal) error {
	e.j.add("kill %s %v", id, sig)
	if sig == syscall.SIGTERM && e.ignoreTERM {
		return nil
	}
	e.exit(id, 128+int(sig))
	return nil
}

func (e *fakeEngine) Remove(_ context.Context, id string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.j.add("remove %s", id)
	delete(e.running, id)
	return nil
}

// waitStarted returns the next container started, or fails the test.
func (e *fakeEngine) waitStarted(t *testing.T) Container {
	t.Helper()
	select {
	case c := <-e.started:
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("no container started within 5s")
		return Container{}
	}
}

// syncBuffer is an io.Writer safe for the runner's goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
