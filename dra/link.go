package dra

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/migpro/migpro/agent"
)

// WithClient supplies the API server client to Link instead of building
// one from the agent's --kubeconfig or the pod's service account.
func WithClient(c kubernetes.Interface) Option { return func(d *Driver) { d.kube = c } }

// Link adds the DRA driver to the agent's cluster link: the ClusterFunc it
// returns builds inner's link (when inner is set) and the driver, and the
// agent runs both. Without an API server the driver says so in one line and
// is left out.
func Link(inner agent.ClusterFunc, opts ...Option) agent.ClusterFunc {
	return func(ctx context.Context, a *agent.Agent) (agent.Cluster, error) {
		var both multi
		if inner != nil {
			c, err := inner(ctx, a)
			if err != nil {
				return nil, err
			}
			if c != nil {
				both = append(both, c)
			}
		}
		probe := &Driver{log: a.Logger()}
		for _, o := range opts {
			o(probe)
		}
		kube := probe.kube
		if kube == nil {
			rc, err := restConfig(a.Config().Kubeconfig)
			if err != nil {
				return nil, err
			}
			if rc == nil {
				probe.log.Warn("DRA driver off: no API server (give --kubeconfig, or run in a pod); the device plugins keep serving")
				return orNil(both), nil
			}
			if kube, err = kubernetes.NewForConfig(rc); err != nil {
				return nil, fmt.Errorf("DRA driver: API client: %w", err)
			}
		}
		d, err := New(a, kube, a.Config().NodeName, append([]Option{WithLogger(a.Logger()), WithRegistry(a.Registry())}, opts...)...)
		if err != nil {
			return nil, err
		}
		return append(both, d), nil
	}
}

func orNil(m multi) agent.Cluster {
	if len(m) == 0 {
		return nil
	}
	return m
}

// multi runs several cluster links together; the first error ends all.
type multi []agent.Cluster

func (m multi) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, len(m))
	for _, c := range m {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				errs <- err
				cancel()
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// restConfig reaches the API server through the kubeconfig when one is
// given, else the pod's service account; nil when neither is there.
func restConfig(kubeconfig string) (*rest.Config, error) {
	switch {
	case kubeconfig != "":
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("DRA driver: kubeconfig %s: %w", kubeconfig, err)
		}
		return cfg, nil
	case os.Getenv("KUBERNETES_SERVICE_HOST") != "":
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("DRA driver: in-cluster config: %w", err)
		}
		return cfg, nil
	}
	return nil, nil
}
