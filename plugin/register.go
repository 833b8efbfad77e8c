package plugin

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// registerLoop registers the plugin with the kubelet, retrying with
// exponential backoff: the kubelet may not be up yet, or kubelet.sock may be
// stale from an earlier run ("connection refused").
func (s *server) registerLoop(ctx context.Context) {
	wait := s.cfg.backoffMin
	for {
		err := s.registerOnce(ctx)
		s.setState(func(st *regState) {
			st.attempts++
			st.lastErr = err
			st.registered = err == nil
		})
		if err == nil {
			s.log.Info("registered with the kubelet")
			return
		}
		if ctx.Err() != nil {
			return
		}
		// The first failure is worth a line; later ones only at debug level.
		// With no kubelet.sock at all there is no kubelet on this host (the
		// agent says so once), and a new kubelet.sock restarts registration.
		entry := s.log.WithError(err).WithField("retry_in", wait)
		if st := s.status(); st.attempts == 1 && exists(s.kubelet) {
			entry.Warn("kubelet registration failed; retrying")
		} else {
			entry.Debug("kubelet registration failed; retrying")
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, s.cfg.backoffMax)
	}
}

func (s *server) registerOnce(ctx context.Context) error {
	conn, err := grpc.NewClient("unix://"+s.kubelet, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("dial kubelet at %s: %w", s.kubelet, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.regTimeout)
	defer cancel()
	_, err = v1beta1.NewRegistrationClient(conn).Register(ctx, &v1beta1.RegisterRequest{
		Version:      v1beta1.Version,
		Endpoint:     filepath.Base(s.socket),
		ResourceName: s.svc.resource,
		Options:      pluginOptions(),
	})
	if err != nil {
		return fmt.Errorf("register %s with kubelet at %s: %w", s.svc.resource, s.kubelet, err)
	}
	return nil
}
