package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Paths of the metrics and probe endpoint (MetricsAddr).
const (
	PathMetrics = "/metrics"
	PathHealthz = "/healthz"
	PathReadyz  = "/readyz"
)

type serviceServer struct {
	srv *http.Server
	ln  net.Listener
}

// listenService opens the metrics and probe endpoint; nil when MetricsAddr
// is empty.
func (a *Agent) listenService() (*serviceServer, error) {
	if a.cfg.MetricsAddr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", a.cfg.MetricsAddr)
	if err != nil {
		return nil, fmt.Errorf("metrics endpoint %s: %w", a.cfg.MetricsAddr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+PathMetrics, promhttp.HandlerFor(a.registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET "+PathHealthz, func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET "+PathReadyz, func(w http.ResponseWriter, _ *http.Request) {
		if err := a.Ready(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return &serviceServer{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}}, nil
}

// MetricsAddr is the address the metrics endpoint listens on (resolved, so
// ":0" in tests becomes the real port); empty when it is off or not yet
// listening.
func (a *Agent) MetricsAddr() string {
	if ln := a.svcLn.Load(); ln != nil {
		return (*ln).Addr().String()
	}
	return ""
}

func (s *serviceServer) serve(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		// ctx has ended: shutdown gets a fresh, bounded context of its own.
		shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = s.srv.Shutdown(shut)
	}()
	if err := s.srv.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Ready says why the agent is not ready to serve, or nil: every part is
// running, NVML answers for every GPU, the API server answers (where the
// agent has one), and, where a kubelet is there, every device plugin is
// registered with it.
func (a *Agent) Ready() error {
	if !a.running.Load() {
		return errors.New("not running")
	}
	for _, d := range a.node.Devices() {
		if _, err := d.MIGEnabled(); err != nil {
			return fmt.Errorf("NVML: GPU %d: %w", d.Index(), err)
		}
	}
	if c := a.clusterReady.Load(); c != nil {
		if err := (*c).Ready(); err != nil {
			return fmt.Errorf("API server: %w", err)
		}
	}
	mgr := a.plugins.Load()
	if mgr == nil || !a.kubeletPresent() {
		return nil
	}
	sts := mgr.Status()
	if len(sts) == 0 && len(a.part.Profiles()) > 0 {
		// The manager is there but has not started its plugins yet: none
		// can have registered.
		return errors.New("device plugins not started yet")
	}
	var unregistered []string
	for _, st := range sts {
		if !st.Registered {
			unregistered = append(unregistered, st.Resource)
		}
	}
	if len(unregistered) > 0 {
		return fmt.Errorf("device plugins not registered with the kubelet: %s", strings.Join(unregistered, ", "))
	}
	return nil
}
