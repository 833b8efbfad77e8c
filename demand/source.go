package demand

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/migpro/migpro/defaults"
)

// Reserved counts, by profile, the idle instances already spoken for by this
// node's claims. A Provisioner must not destroy those to make room.
type Reserved = map[string]int

// Provisioner is the node's partitioner as the demand source sees it.
type Provisioner interface {
	// CanFit reports, without side effects, whether n instances of profile
	// beyond those keep reserves can be had now: idle ones nobody reserved,
	// plus new ones in free space or in the space of unreserved idle ones.
	CanFit(profile string, n int, keep Reserved) bool
	// Provision makes one more idle instance of profile, destroying only
	// idle instances beyond those keep reserves, or fails.
	Provision(ctx context.Context, profile string, keep Reserved) error
	// IdleCount counts the complete, idle instances of profile.
	IdleCount(profile string) int
}

// PendingObserver is a Provisioner that also wants to know what waits: after
// every pass the source reports, by profile, the instances the pending pods
// this node could serve still need (claims of this node it could not finish,
// and pods it would claim if it had room). The node's partitioner keeps room
// for them when it places other requests. nil means nothing waits.
type PendingObserver interface {
	ObservePending(counts map[string]int)
}

// CoreClient is the part of a Kubernetes clientset the demand source uses
// (pods and events); a kubernetes.Interface is one.
type CoreClient interface {
	CoreV1() typedcorev1.CoreV1Interface
}

// config is what New assembles from its arguments and options.
type config struct {
	Client      CoreClient
	NodeName    string
	Provisioner Provisioner

	Domain          string
	Resources       map[corev1.ResourceName]string
	Logger          logrus.FieldLogger
	ClaimTimeout    time.Duration
	ScheduleTimeout time.Duration
	Backoff         time.Duration
	Resync          time.Duration
	Events          bool
	Now             func() time.Time
}

// Option configures a Source.
type Option func(*config)

// WithDomain sets the domain prefixing MIG resource names,
// <domain>/mig-<profile> (default defaults.Domain).
func WithDomain(d string) Option { return func(c *config) { c.Domain = d } }

// WithResources maps each resource this node can provide to its profile,
// e.g. "nvidia.com/mig-1g.10gb.me" -> "1g.10gb+me". A pod that asks for a
// <domain>/mig-* resource outside this map is left to other nodes.
func WithResources(r map[corev1.ResourceName]string) Option {
	return func(c *config) { c.Resources = r }
}

// WithLogger sets the logger (default logrus's standard logger).
func WithLogger(l logrus.FieldLogger) Option { return func(c *config) { c.Logger = l } }

// WithClaimTimeout: a claim not provisioned within d may be taken over
// (default 1 min).
func WithClaimTimeout(d time.Duration) Option { return func(c *config) { c.ClaimTimeout = d } }

// WithScheduleTimeout: a provisioned claim whose pod is still pending after d
// may be taken over (default 3 min); the claimer itself gives it up.
func WithScheduleTimeout(d time.Duration) Option {
	return func(c *config) { c.ScheduleTimeout = d }
}

// WithBackoff sets how long a node leaves a pod alone after giving it up
// (default 30 s).
func WithBackoff(d time.Duration) Option { return func(c *config) { c.Backoff = d } }

// WithResync sets the period of a full pass besides the watch events, for
// timeouts and for instances freed on the node (default 5 s).
func WithResync(d time.Duration) Option { return func(c *config) { c.Resync = d } }

// WithEvents records Kubernetes Events on the pods (needs create on events;
// failures are only logged).
func WithEvents(on bool) Option { return func(c *config) { c.Events = on } }

// WithClock sets the clock (default time.Now).
func WithClock(now func() time.Time) Option { return func(c *config) { c.Now = now } }

// Source watches pending pods and provisions for the ones it claims.
type Source struct {
	cfg      config
	log      logrus.FieldLogger
	recorder record.EventRecorder

	store cache.Store
	kick  chan struct{}

	mu      sync.Mutex
	backoff map[types.UID]time.Time
	// latest holds pods this source patched, until the watch catches up:
	// by UID, the resourceVersions it patched from and the answer.
	latest map[types.UID]patched
}

type patched struct {
	older map[string]bool // resourceVersions this source patched away from
	pod   *corev1.Pod
}

// New returns a Source ready to Run for the node nodeName: client talks to
// the API server and prov makes the instances.
func New(client CoreClient, nodeName string, prov Provisioner, opts ...Option) (*Source, error) {
	cfg := config{Client: client, NodeName: nodeName, Provisioner: prov, Domain: defaults.Domain}
	for _, o := range opts {
		o(&cfg)
	}
	switch {
	case cfg.Client == nil:
		return nil, errors.New("demand: no API client")
	case cfg.NodeName == "":
		return nil, errors.New("demand: no node name")
	case cfg.Provisioner == nil:
		return nil, errors.New("demand: no provisioner")
	case cfg.Domain == "":
		return nil, errors.New("demand: no resource domain")
	}
	if cfg.Logger == nil {
		return nil, errors.New("demand: no logger (WithLogger)")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.ClaimTimeout, time.Minute)
	def(&cfg.ScheduleTimeout, 3*time.Minute)
	def(&cfg.Backoff, 30*time.Second)
	def(&cfg.Resync, 5*time.Second)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Source{cfg: cfg, log: cfg.Logger.WithFields(logrus.Fields{"component": "demand", "node": cfg.NodeName}),
		kick: make(chan struct{}, 1), backoff: map[types.UID]time.Time{}, latest: map[types.UID]patched{}}
	return s, nil
}

// PendingSelector is the field selector of the watch: pods without a node
// that are still pending.
const PendingSelector = "spec.nodeName=,status.phase=Pending"

// Run watches and provisions until ctx ends.
func (s *Source) Run(ctx context.Context) error {
	if s.cfg.Events {
		b := record.NewBroadcaster(record.WithContext(ctx))
		b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: s.cfg.Client.CoreV1().Events("")})
		defer b.Shutdown()
		s.recorder = b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "migpro-agent", Host: s.cfg.NodeName})
	}
	// A pod informer of its own, not informers.SharedInformerFactory: the
	// factory links an informer and a lister of every API group into the
	// agent, which costs it resident memory for code it never runs.
	pods := s.cfg.Client.CoreV1().Pods(metav1.NamespaceAll)
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = PendingSelector
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = PendingSelector
			return pods.Watch(ctx, o)
		},
	}, s.cfg.Client), &corev1.Pod{}, 0, cache.Indexers{})
	if err := inf.SetTransform(stripManagedFields); err != nil {
		return fmt.Errorf("demand: pod informer: %w", err)
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.trigger() },
		UpdateFunc: func(any, any) { s.trigger() },
		DeleteFunc: func(any) { s.trigger() },
	}); err != nil {
		return fmt.Errorf("demand: pod informer: %w", err)
	}
	s.store = inf.GetStore()
	ran := make(chan struct{})
	ictx, stop := context.WithCancel(ctx)
	go func() { defer close(ran); inf.RunWithContext(ictx) }()
	defer func() { stop(); <-ran }()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return ctx.Err()
	}
	s.log.WithFields(logrus.Fields{"resources": len(s.cfg.Resources), "claim_timeout": s.cfg.ClaimTimeout,
		"scheduleTimeout": s.cfg.ScheduleTimeout}).Info("watching pending pods for MIG demand")
	t := time.NewTicker(s.cfg.Resync)
	defer t.Stop()
	for {
		s.Reconcile(ctx)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.kick:
			// Let a burst of pod events settle into one pass: passes read
			// this node's Node from the API server.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(passGap):
			}
			select {
			case <-s.kick:
			default:
			}
		case <-t.C:
		}
	}
}

// passGap is the least time between a watch event and the pass it starts.
const passGap = 50 * time.Millisecond

func (s *Source) trigger() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// stripManagedFields keeps the cache small: the source never reads them.
func stripManagedFields(obj any) (any, error) {
	if pod, ok := obj.(*corev1.Pod); ok {
		pod.ManagedFields = nil
	}
	return obj, nil
}

// pods returns the cached pods, each replaced by this source's own newer
// copy while the watch has not caught up with a patch.
func (s *Source) pods() []*corev1.Pod {
	if s.store == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*corev1.Pod
	seen := map[types.UID]bool{}
	for _, obj := range s.store.List() {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			continue
		}
		seen[pod.UID] = true
		if p, ok := s.latest[pod.UID]; ok {
			if p.older[pod.ResourceVersion] {
				pod = p.pod
			} else {
				delete(s.latest, pod.UID)
			}
		}
		out = append(out, pod)
	}
	for uid := range s.latest {
		if !seen[uid] {
			delete(s.latest, uid)
		}
	}
	for uid := range s.backoff {
		if !seen[uid] {
			delete(s.backoff, uid)
		}
	}
	return out
}

func (s *Source) remember(from, to *corev1.Pod) {
	s.mu.Lock()
	p, ok := s.latest[to.UID]
	if !ok {
		p.older = map[string]bool{}
	}
	p.older[from.ResourceVersion] = true
	p.pod = to
	s.latest[to.UID] = p
	s.mu.Unlock()
}

func (s *Source) backOff(pod *corev1.Pod, until time.Time) {
	s.mu.Lock()
	s.backoff[pod.UID] = until
	s.mu.Unlock()
}

func (s *Source) backingOff(pod *corev1.Pod, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	until, ok := s.backoff[pod.UID]
	return ok && now.Before(until)
}

func (s *Source) event(pod *corev1.Pod, kind, reason, format string, args ...any) {
	if s.recorder != nil {
		s.recorder.Eventf(pod, kind, reason, format, args...)
	}
}
