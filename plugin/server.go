package plugin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/migpro/migpro/defaults"
)

// server is one profile's device plugin: a gRPC server on its socket and the
// registration of that socket with the kubelet.
type server struct {
	svc     *service
	socket  string // absolute path
	kubelet string // absolute path of kubelet.sock
	cfg     *config
	log     logrus.FieldLogger

	mu        sync.Mutex
	grpc      *grpc.Server
	served    chan struct{} // closed when Serve returns
	cancelReg context.CancelFunc
	regDone   chan struct{}
	state     regState
}

// regState is the registration status shown by Manager.Status.
type regState struct {
	registered bool
	lastErr    error
	attempts   int
}

// start listens on the socket (replacing a stale one), serves, and registers
// with the kubelet in the background, retrying until ctx ends or stop.
func (s *server) start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.grpc != nil {
		return nil
	}
	if err := os.Remove(s.socket); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale socket %s: %w", s.socket, err)
	}
	lis, err := net.Listen("unix", s.socket)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.socket, err)
	}
	g := grpc.NewServer()
	v1beta1.RegisterDevicePluginServer(g, s.svc)
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := g.Serve(lis); err != nil {
			s.log.WithError(err).Error("device plugin server stopped")
		}
	}()
	s.grpc, s.served = g, served

	s.startRegisterLocked(ctx)
	s.log.WithField("socket", s.socket).Info("device plugin serving")
	return nil
}

// startRegisterLocked starts a registration loop; s.mu must be held and no
// loop running.
func (s *server) startRegisterLocked(ctx context.Context) {
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	s.cancelReg, s.regDone = cancel, done
	s.state = regState{}
	go func() {
		defer close(done)
		s.registerLoop(rctx)
	}()
}

// reregister registers the running server again (a new kubelet), without
// touching its socket. A stopped server is started.
func (s *server) reregister(ctx context.Context) error {
	s.mu.Lock()
	if s.grpc == nil {
		s.mu.Unlock()
		return s.start(ctx)
	}
	cancel, done := s.cancelReg, s.regDone
	s.mu.Unlock()
	cancel()
	<-done
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.grpc != nil {
		s.startRegisterLocked(ctx)
	}
	return nil
}

// stop ends the registration attempts, closes the server and its streams and
// removes the socket.
func (s *server) stop() {
	s.mu.Lock()
	g, served, cancel, regDone := s.grpc, s.served, s.cancelReg, s.regDone
	s.grpc, s.cancelReg = nil, nil
	s.state.registered = false
	s.mu.Unlock()
	if g == nil {
		return
	}
	cancel()
	<-regDone
	g.Stop() // also removes the socket file (the listener unlinks it)
	<-served
	if err := os.Remove(s.socket); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.WithError(err).Warn("cannot remove plugin socket")
	}
	s.log.Info("device plugin stopped")
}

// restart makes a fresh socket and registers again, e.g. after the kubelet
// restarted (it deletes plugin sockets and forgets registrations).
func (s *server) restart(ctx context.Context) error {
	s.stop()
	return s.start(ctx)
}

func (s *server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.grpc != nil
}

func (s *server) status() regState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

func (s *server) setState(f func(*regState)) {
	s.mu.Lock()
	f(&s.state)
	s.mu.Unlock()
}

func newServer(profile string, inv Inventory, changed *notifier, cfg *config) *server {
	resource := defaults.ResourceName(cfg.domain, profile)
	log := cfg.log.WithFields(logrus.Fields{"component": "plugin", "resource": resource})
	return &server{
		svc: &service{profile: profile, resource: resource, inv: inv, changed: changed,
			check: cfg.check, prefer: cfg.prefer, observe: cfg.observe, log: log},
		socket:  filepath.Join(cfg.dir, SocketName(profile)),
		kubelet: filepath.Join(cfg.dir, defaults.KubeletSocketName),
		cfg:     cfg,
		log:     log,
	}
}
