package plugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/sirupsen/logrus"

	"github.com/migpro/migpro/defaults"
)

// Manager runs one device plugin server per profile of an Inventory.
type Manager struct {
	inv     Inventory
	cfg     config
	changed *notifier
	log     logrus.FieldLogger

	running atomic.Bool
	mu      sync.Mutex
	servers map[string]*server // by profile; changed only by Run's goroutine
}

// NewManager makes a Manager for inv; Run starts it.
func NewManager(inv Inventory, opts ...Option) (*Manager, error) {
	if inv == nil {
		return nil, errors.New("plugin: nil inventory")
	}
	c := defaultConfig()
	for _, o := range opts {
		o(&c)
	}
	if c.log == nil {
		return nil, errors.New("plugin: no logger (WithLogger)")
	}
	if c.prefer == nil {
		c.prefer = DefaultPreference
	}
	switch {
	case c.dir == "":
		return nil, errors.New("plugin: empty device-plugin directory")
	case !validDomain(c.domain):
		return nil, fmt.Errorf("plugin: resource domain %q is not a DNS name", c.domain)
	case c.backoffMin <= 0 || c.backoffMax < c.backoffMin:
		return nil, fmt.Errorf("plugin: bad registration backoff %v..%v", c.backoffMin, c.backoffMax)
	}
	return &Manager{inv: inv, cfg: c, changed: newNotifier(), log: c.log.WithField("component", "plugin"),
		servers: map[string]*server{}}, nil
}

// Run serves until ctx ends, then stops every server and removes their
// sockets. It returns an error only if it cannot start: the plugin directory
// cannot be made or watched, or Run is already running. Registration failures
// are retried and shown by Status.
func (m *Manager) Run(ctx context.Context) error {
	if !m.running.CompareAndSwap(false, true) {
		return errors.New("plugin: Manager.Run called twice")
	}
	defer m.running.Store(false)
	if err := os.MkdirAll(m.cfg.dir, 0o750); err != nil {
		return fmt.Errorf("plugin: create device-plugin directory: %w", err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("plugin: watch device-plugin directory: %w", err)
	}
	defer w.Close()
	if err := w.Add(m.cfg.dir); err != nil {
		return fmt.Errorf("plugin: watch device-plugin directory %s: %w", m.cfg.dir, err)
	}
	defer m.stopAll()

	m.sync(ctx)
	dir := filepath.Clean(m.cfg.dir)
	kubelet := filepath.Join(dir, defaults.KubeletSocketName)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-m.inv.Changes():
			m.sync(ctx)
			m.changed.notify()
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("plugin: device-plugin directory watch closed")
			}
			if filepath.Clean(ev.Name) == dir && (ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)) {
				if err := m.rewatch(ctx, w); err != nil {
					return err
				}
				continue
			}
			m.onFileEvent(ctx, ev, kubelet)
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("plugin: device-plugin directory watch closed")
			}
			m.log.WithError(err).Warn("device-plugin directory watch error")
		}
	}
}

// rewatch handles the plugin directory itself being deleted (a test harness
// or an admin clearing it): the watch is gone with it. It makes the directory
// again, watches it again and serves every plugin on a fresh socket; the
// kubelet's new kubelet.sock then triggers the registrations. It retries
// with backoff until it succeeds or ctx ends.
func (m *Manager) rewatch(ctx context.Context, w *fsnotify.Watcher) error {
	m.log.Warn("device-plugin directory deleted: making it again")
	wait := m.cfg.backoffMin
	for {
		_ = w.Remove(m.cfg.dir) // the old watch may linger until the kernel drops it
		err := os.MkdirAll(m.cfg.dir, 0o750)
		if err == nil {
			err = w.Add(m.cfg.dir)
		}
		if err == nil {
			break
		}
		m.log.WithError(err).Warn("cannot watch the device-plugin directory again; retrying")
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, m.cfg.backoffMax)
	}
	for _, s := range m.snapshot() {
		if err := s.restart(ctx); err != nil {
			s.log.WithError(err).Error("cannot restart device plugin")
		}
	}
	return nil
}

// onFileEvent reacts to the kubelet restarting (a new kubelet.sock: every
// plugin registers again, on a fresh socket if the kubelet deleted its
// socket) and to a plugin socket deleted under a running server (it is made
// again and registered again).
func (m *Manager) onFileEvent(ctx context.Context, ev fsnotify.Event, kubelet string) {
	name := filepath.Clean(ev.Name)
	if name == kubelet && ev.Has(fsnotify.Create) {
		m.log.Info("kubelet.sock created: re-registering every device plugin")
		for _, s := range m.snapshot() {
			var err error
			if exists(s.socket) {
				err = s.reregister(ctx)
			} else {
				err = s.restart(ctx)
			}
			if err != nil {
				s.log.WithError(err).Error("cannot restart device plugin")
			}
		}
		return
	}
	if !ev.Has(fsnotify.Remove) && !ev.Has(fsnotify.Rename) {
		return
	}
	for _, s := range m.snapshot() {
		if s.socket != name || !s.running() {
			continue
		}
		if exists(s.socket) {
			return // already made again
		}
		s.log.Warn("plugin socket deleted: serving again")
		if err := s.restart(ctx); err != nil {
			s.log.WithError(err).Error("cannot restart device plugin")
		}
	}
}

// sync starts servers for new profiles and stops those no longer advertised.
func (m *Manager) sync(ctx context.Context) {
	want := map[string]bool{}
	for _, p := range m.inv.Profiles() {
		if err := validProfile(p); err != nil {
			m.log.WithError(err).Error("profile not advertised")
			continue
		}
		want[p] = true
	}
	m.mu.Lock()
	var stop []*server
	for p, s := range m.servers {
		if !want[p] {
			stop = append(stop, s)
			delete(m.servers, p)
		}
	}
	var start []*server
	for p := range want {
		if _, ok := m.servers[p]; !ok {
			s := newServer(p, m.inv, m.changed, &m.cfg)
			m.servers[p] = s
			start = append(start, s)
		}
	}
	m.mu.Unlock()
	for _, s := range stop {
		s.stop()
	}
	for _, s := range start {
		if err := s.start(ctx); err != nil {
			// Left in the map: the next change or kubelet restart retries it.
			s.log.WithError(err).Error("cannot start device plugin")
		}
	}
}

func (m *Manager) snapshot() []*server {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*server, 0, len(m.servers))
	for _, s := range m.servers {
		out = append(out, s)
	}
	return out
}

func (m *Manager) stopAll() {
	m.mu.Lock()
	all := make([]*server, 0, len(m.servers))
	for p, s := range m.servers {
		all = append(all, s)
		delete(m.servers, p)
	}
	m.mu.Unlock()
	for _, s := range all {
		s.stop()
	}
}

// Status is one plugin's state, for status pages and migctl.
type Status struct {
	Profile    string
	Resource   string
	Socket     string
	Serving    bool
	Registered bool
	// Attempts counts registrations tried since the server (re)started.
	Attempts int
	// LastError is the last registration error, "" after success.
	LastError string
}

// Status lists every plugin's state, sorted by resource.
func (m *Manager) Status() []Status {
	out := []Status{}
	for _, s := range m.snapshot() {
		st := s.status()
		e := ""
		if st.lastErr != nil {
			e = st.lastErr.Error()
		}
		out = append(out, Status{Profile: s.svc.profile, Resource: s.svc.resource, Socket: s.socket,
			Serving: s.running(), Registered: st.registered, Attempts: st.attempts, LastError: e})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Resource < out[j].Resource })
	return out
}

// Resources lists the advertised resource names, sorted.
func (m *Manager) Resources() []string {
	var out []string
	for _, s := range m.Status() {
		out = append(out, s.Resource)
	}
	return slices.Clip(out)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
