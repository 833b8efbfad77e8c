package telemetry

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// Sample is one point of a container's memory series.
type Sample struct {
	At time.Time `json:"at"`
	// UsedBytes is the best figure for memory held: the instance's used
	// memory for nvml, the live driver-allocated bytes for shim.
	UsedBytes uint64 `json:"usedBytes"`
	// PeakBytes is the highest UsedBytes of this source since registration.
	PeakBytes uint64 `json:"peakBytes"`
	// RequestedBytes is what the program asked the driver for (shim only;
	// 0 for nvml). The predictor's reuse ratio divides it by physical use.
	RequestedBytes uint64 `json:"requestedBytes"`
	// Allocs is the container's driver allocation calls so far, as its
	// shims count them (shim only; 0 for nvml). The predictor reads the
	// bytes a rise took per call to tell a load from growth.
	Allocs uint64 `json:"allocs,omitempty"`
	Source Source `json:"source"`
}

// Series is what the predictor needs: the bounded history of a container and
// an incremental feed. Service implements it.
type Series interface {
	// Samples copies the container's ring, oldest first; nil if unknown.
	Samples(containerID string) []Sample
	// OnSample subscribes fn to every new sample of every container. fn runs
	// on the ingest path and must not block. It may run concurrently for
	// different containers; for one container, samples arrive one at a time
	// and in the order Samples lists them.
	OnSample(fn func(containerID string, s Sample))
}

// MemorySource is the slice of the GPU layer the poller needs. The agent
// adapts gpu's Device.InstanceMemory to it.
type MemorySource interface {
	InstanceMemory(migUUID string) (used, total uint64, err error)
}

// Errors callers can test for.
var (
	ErrTooManyContainers = errors.New("too many registered containers")
	ErrUnknownContainer  = errors.New("unknown container")
)

// Defaults for the bounds; each has an Option.
const (
	DefaultStateDir      = "/run/migpro"
	DefaultRingSize      = 4096
	DefaultMaxContainers = 1024
	DefaultMaxProcesses  = 64
	DefaultRate          = 2000 // datagrams per second per container
	DefaultBurst         = 4000
	// SocketName is the per-container socket's file name, on the host under
	// <state>/containers/<id>/ and in the container under /run/migpro/.
	SocketName = "telemetry.sock"
	// registrationFile lets a restarted agent rebind every socket.
	registrationFile = "registration.json"
)

type config struct {
	stateDir      string
	ringSize      int
	maxContainers int
	maxProcesses  int
	rate          float64
	burst         float64
	now           func() time.Time
	registerer    prometheus.Registerer
	log           logrus.FieldLogger
	pidAlive      func(pid int) bool
	pidNS         func() string
	pidNSOf       func(pid int) string
}

// Option configures a Service.
type Option func(*config)

// WithStateDir sets the directory holding containers/<id>/telemetry.sock.
func WithStateDir(dir string) Option { return func(c *config) { c.stateDir = dir } }

// WithRingSize bounds each container's history.
func WithRingSize(n int) Option { return func(c *config) { c.ringSize = n } }

// WithMaxContainers bounds how many containers may register.
func WithMaxContainers(n int) Option { return func(c *config) { c.maxContainers = n } }

// WithMaxProcesses bounds how many processes a container's series tracks.
func WithMaxProcesses(n int) Option { return func(c *config) { c.maxProcesses = n } }

// WithRate bounds the datagrams accepted per container: perSecond sustained,
// burst at once. Beyond it the reader stops reading, so a flooding container
// fills only its own socket buffer.
func WithRate(perSecond, burst int) Option {
	return func(c *config) { c.rate, c.burst = float64(perSecond), float64(burst) }
}

// WithClock sets the clock that stamps samples (tests).
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithRegisterer registers the Service's metrics.
func WithRegisterer(r prometheus.Registerer) Option { return func(c *config) { c.registerer = r } }

// WithLogger sets the logger.
func WithLogger(l logrus.FieldLogger) Option { return func(c *config) { c.log = l } }

// WithPIDCheck sets how the poller decides a registered container's init
// process is gone (then it deregisters it) and a shim process has exited
// without saying so. nil disables both checks. The check only applies to
// pids the agent could see when they first appeared, so an agent without
// the host's pid namespace never drops live containers; it does need it
// (hostPID) to collect containers whose poststop hook never reached it.
func WithPIDCheck(alive func(pid int) bool) Option { return func(c *config) { c.pidAlive = alive } }

// Stats counts what the Service accepted and dropped.
type Stats struct {
	Accepted, Malformed, Oversized, RateLimited, TooManyProcesses, Stale uint64
	PollErrors, RejectedRegistrations                                    uint64
	// Foreign counts datagrams whose sender (by its kernel-attached
	// credentials) is not in the registered container's pid namespace.
	Foreign uint64
}

type stats struct {
	accepted, malformed, oversized, rateLimited, tooManyProcs, stale atomic.Uint64
	pollErrors, rejected, foreign                                    atomic.Uint64
}

// Service owns the per-container sockets and series.
type Service struct {
	cfg       config
	realClock bool // cfg.now is time.Now, so ingest may reuse its clock read
	st        stats
	subs      atomic.Pointer[[]func(string, Sample)]
	usageSubs atomic.Pointer[[]func(string, Usage)]
	subMu     sync.Mutex // serialises OnSample and OnUsage writers; guards ends and failOpens
	ends      []func(Registration, uint64)
	failOpens []func(Registration, string)

	mu         sync.RWMutex
	containers map[string]*container
	closed     bool
}

// New makes a Service. It listens on nothing until containers register.
func New(opts ...Option) (*Service, error) {
	cfg := config{
		stateDir: DefaultStateDir, ringSize: DefaultRingSize, maxContainers: DefaultMaxContainers,
		maxProcesses: DefaultMaxProcesses, rate: DefaultRate, burst: DefaultBurst,
		pidAlive: procAlive, pidNS: ownPIDNamespace, pidNSOf: pidNamespaceOf,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.log == nil {
		return nil, errors.New("telemetry: no logger (WithLogger)")
	}
	if cfg.ringSize < 1 || cfg.maxContainers < 1 || cfg.maxProcesses < 1 || cfg.rate <= 0 || cfg.burst < 1 {
		return nil, fmt.Errorf("telemetry: bounds must be positive (ring %d, containers %d, processes %d, rate %v, burst %v)",
			cfg.ringSize, cfg.maxContainers, cfg.maxProcesses, cfg.rate, cfg.burst)
	}
	s := &Service{cfg: cfg, containers: map[string]*container{}, realClock: cfg.now == nil}
	if s.realClock {
		s.cfg.now = time.Now
	}
	if cfg.registerer != nil {
		if err := s.registerMetrics(cfg.registerer); err != nil {
			return nil, fmt.Errorf("telemetry: registering metrics: %w", err)
		}
	}
	return s, nil
}

// Stats returns a snapshot of the counters.
func (s *Service) Stats() Stats {
	return Stats{
		Accepted: s.st.accepted.Load(), Malformed: s.st.malformed.Load(), Oversized: s.st.oversized.Load(),
		RateLimited: s.st.rateLimited.Load(), TooManyProcesses: s.st.tooManyProcs.Load(), Stale: s.st.stale.Load(),
		PollErrors: s.st.pollErrors.Load(), RejectedRegistrations: s.st.rejected.Load(),
		Foreign: s.st.foreign.Load(),
	}
}

// OnSample implements Series.
func (s *Service) OnSample(fn func(containerID string, smp Sample)) {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	var next []func(string, Sample)
	if cur := s.subs.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, fn)
	s.subs.Store(&next)
}

func (s *Service) publish(id string, smp Sample, u Usage) {
	if subs := s.subs.Load(); subs != nil {
		for _, fn := range *subs {
			fn(id, smp)
		}
	}
	if subs := s.usageSubs.Load(); subs != nil {
		for _, fn := range *subs {
			fn(id, u)
		}
	}
}

// Samples implements Series.
func (s *Service) Samples(containerID string) []Sample {
	c := s.get(containerID)
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ring.snapshot()
}

func (s *Service) get(id string) *container {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.containers[id]
}

func (s *Service) snapshotContainers() []*container {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*container, 0, len(s.containers))
	for _, c := range s.containers {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].reg.ID < out[j].reg.ID })
	return out
}

// Register creates (or, for an id already known, refreshes) a container's
// socket and series. It is idempotent so a retried hook does no harm.
func (s *Service) Register(r Registration) (Endpoint, error) {
	if err := r.Validate(); err != nil {
		s.st.rejected.Add(1)
		return Endpoint{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Endpoint{}, errors.New("telemetry: service closed")
	}
	if c, ok := s.containers[r.ID]; ok {
		c.mu.Lock()
		c.reg = r.Clone()
		c.pidCheck = s.pidVisible(r.PID)
		c.pidNS = ""
		if c.pidCheck && s.cfg.pidNSOf != nil {
			c.pidNS = s.cfg.pidNSOf(r.PID)
		}
		check := c.pidCheck
		c.mu.Unlock()
		if err := writeRegistration(c.dir, r); err != nil {
			return Endpoint{}, err
		}
		if err := writePIDCheck(c.dir, check, s.cfg.pidNS()); err != nil {
			return Endpoint{}, err
		}
		return c.endpoint(), nil
	}
	if len(s.containers) >= s.cfg.maxContainers {
		s.st.rejected.Add(1)
		return Endpoint{}, fmt.Errorf("telemetry: registering %s: %w (limit %d)", r.ID, ErrTooManyContainers, s.cfg.maxContainers)
	}
	c, err := s.open(r)
	if err != nil {
		return Endpoint{}, err
	}
	s.containers[r.ID] = c
	go s.readLoop(c)
	return c.endpoint(), nil
}

// open makes the container's directory, socket and registration record.
// Everything under the state dir is agent-owned, and the id was validated to
// be a single safe path element, so plain path joins are sound here.
func (s *Service) open(r Registration) (*container, error) {
	parent := filepath.Join(s.cfg.stateDir, "containers")
	dir := filepath.Join(parent, r.ID)
	sock := filepath.Join(dir, SocketName)
	if err := privateParent(parent); err != nil {
		return nil, err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("telemetry: creating %s: %w", dir, err)
	}
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("telemetry: removing stale %s: %w", sock, err)
	}
	conn, err := listenIn(dir)
	if err != nil {
		return nil, fmt.Errorf("telemetry: listening on %s: %w", sock, err)
	}
	fail := func(err error) (*container, error) {
		_ = conn.Close()
		_ = os.RemoveAll(dir)
		return nil, err
	}
	// Any uid in the container must be able to send. On the host the socket
	// is behind the 0700 containers directory, so it is reachable only
	// through this container's own bind mount (and by host root).
	if err := os.Chmod(sock, 0o666); err != nil {
		return fail(fmt.Errorf("telemetry: chmod %s: %w", sock, err))
	}
	if err := enablePassCred(conn); err != nil {
		return fail(fmt.Errorf("telemetry: SO_PASSCRED on %s: %w", sock, err))
	}
	if err := writeRegistration(dir, r); err != nil {
		return fail(err)
	}
	if err := writePIDCheck(dir, s.pidVisible(r.PID), s.cfg.pidNS()); err != nil {
		return fail(err)
	}
	c := &container{
		reg: r.Clone(), dir: dir, sock: sock, conn: conn, done: make(chan struct{}),
		ring: newRing(s.cfg.ringSize), procs: map[procKey]*proc{},
		tokens: s.cfg.burst, refill: time.Now(), pidCheck: s.pidVisible(r.PID),
	}
	if c.pidCheck && s.cfg.pidNSOf != nil {
		c.pidNS = s.cfg.pidNSOf(r.PID)
	}
	c.pubCond = sync.NewCond(&c.pubMu)
	return c, nil
}

// privateParent makes <state>/containers owned by the agent and mode 0700:
// no host user but root can walk to a container's socket (each container
// sees only its own directory, through its bind mount).
func privateParent(parent string) error {
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return fmt.Errorf("telemetry: creating %s: %w", parent, err)
	}
	if err := os.Chmod(parent, 0o700); err != nil {
		return fmt.Errorf("telemetry: chmod %s: %w", parent, err)
	}
	return nil
}

// pidVisible reports whether the pid check can be trusted for pid.
func (s *Service) pidVisible(pid int) bool {
	return s.cfg.pidAlive != nil && pid > 0 && s.cfg.pidAlive(pid)
}

// OnDeregister subscribes fn to every container's end (its poststop hook, or
// the poller finding its processes gone), with its registration and its
// peak bytes. The agent records the peak in the estimator's history.
func (s *Service) OnDeregister(fn func(r Registration, peakBytes uint64)) {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	s.ends = append(s.ends, fn)
}

// Deregister closes a container's socket and forgets its series.
func (s *Service) Deregister(id string) error {
	s.mu.Lock()
	c, ok := s.containers[id]
	delete(s.containers, id)
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("telemetry: deregistering %q: %w", id, ErrUnknownContainer)
	}
	_ = c.conn.Close()
	<-c.done
	c.mu.Lock()
	reg, peak := c.reg, max(c.shimPeak, c.nvmlPeak)
	c.mu.Unlock()
	s.subMu.Lock()
	ends := append([]func(Registration, uint64){}, s.ends...)
	s.subMu.Unlock()
	for _, fn := range ends {
		fn(reg, peak)
	}
	if err := os.RemoveAll(c.dir); err != nil {
		return fmt.Errorf("telemetry: removing %s: %w", c.dir, err)
	}
	return nil
}

// Restore rebinds the sockets of every container recorded under the state
// dir, so an agent restart does not cut running containers off: their bind
// mount shows the directory, and the new socket appears in it.
func (s *Service) Restore() (int, error) {
	root := filepath.Join(s.cfg.stateDir, "containers")
	ents, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("telemetry: restoring from %s: %w", root, err)
	}
	n := 0
	for _, e := range ents {
		dir := filepath.Join(root, e.Name())
		r, err := readRegistration(dir)
		if err == nil && r.ID != e.Name() {
			err = fmt.Errorf("registration id %q in directory %q", r.ID, e.Name())
		}
		if err == nil && s.cfg.pidAlive != nil && r.PID > 0 && !s.cfg.pidAlive(r.PID) {
			// The poller's guard: "not visible" means "gone" only for a
			// pid the agent could see when it registered, from the pid
			// namespace it is in now.
			log := s.cfg.log.WithFields(logrus.Fields{"container": r.ID, "pid": r.PID})
			if checked := pidCheckedIn(dir); checked == "" || checked != s.cfg.pidNS() {
				log.WithField("pid_namespace", checked).Info("telemetry: restoring a container whose pid this agent cannot see; it is kept (run the agent with the host's pid namespace to collect exited containers)")
			} else {
				// Gone while the agent was down (its poststop could not
				// reach us): clean up instead of resurrecting it.
				if rerr := os.RemoveAll(dir); rerr != nil {
					log.WithError(rerr).Warn("telemetry: removing exited container")
				} else {
					log.Info("telemetry: container exited while the agent was down; removed its registration")
				}
				continue
			}
		}
		if err == nil {
			_, err = s.Register(r)
		}
		if err != nil {
			s.cfg.log.WithError(err).WithField("container", e.Name()).Warn("telemetry: not restoring container")
			continue
		}
		n++
	}
	return n, nil
}

// Close stops every reader. It leaves the directories and registration
// records in place for Restore.
func (s *Service) Close() error {
	s.mu.Lock()
	s.closed = true
	cs := make([]*container, 0, len(s.containers))
	for _, c := range s.containers {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	for _, c := range cs {
		_ = c.conn.Close()
		<-c.done
	}
	return nil
}

// listenIn binds dir/telemetry.sock through /proc/self/fd, so the 108-byte
// sun_path limit applies to that short name and not to the state dir's depth
// plus a 64-character container id.
func listenIn(dir string) (*net.UnixConn, error) {
	d, err := os.OpenFile(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	name := "/proc/self/fd/" + strconv.Itoa(int(d.Fd())) + "/" + SocketName
	return net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
}
