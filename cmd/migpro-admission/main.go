package main

import (
	"context"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/migpro/migpro/internal/cli"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/migpro/migpro/defaults"
	"github.com/migpro/migpro/internal/klogrus"
	"github.com/migpro/migpro/nodeview"
	"github.com/migpro/migpro/readmit"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "migpro-admission: %v\n", err)
		os.Exit(1)
	}
}

// options are the command-line flags.
type options struct {
	listen, certFile, keyFile, kubeconfig, domain, level, format string
	agentUser, clientCA                                          string
	deviceClass                                                  string
	nodeView                                                     bool
	reviewTTL                                                    time.Duration
}

func newFlags(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("migpro-admission", flag.ContinueOnError)
	fs.StringVar(&o.listen, "listen", ":8443", "HTTPS address to serve /mutate, /mutate-claim, /validate-eviction, /validate-recommendation, /healthz and the node view (/api/, /apis/) on")
	fs.StringVar(&o.certFile, "tls-cert", "", "serving certificate (PEM); required")
	fs.StringVar(&o.keyFile, "tls-key", "", "serving key (PEM); required")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the API server (default: in-cluster config)")
	fs.StringVar(&o.domain, "domain", defaults.Domain, "resource name domain: <domain>/mig-<profile>")
	fs.StringVar(&o.agentUser, "agent-user", readmit.DefaultAgentUser, "the node agent's user name, whose evictions /validate-eviction limits to its own node")
	fs.StringVar(&o.clientCA, "client-ca", "", "PEM CAs whose client certificates may post admission reviews (the API server's); empty: any client may, and learns the answers")
	fs.StringVar(&o.deviceClass, "device-class", readmit.DefaultDeviceClass, "DeviceClass of every migpro DRA device: /mutate-claim moves a claim's request to the recommended profile on it")
	fs.BoolVar(&o.nodeView, "node-view", true, "serve each node agent's reads of its node's pods, ReplicaSets, Jobs and Namespaces on /api/ and /apis/ (package nodeview; needs tokenreviews create, pods list/watch, jobs and namespaces get)")
	fs.DurationVar(&o.reviewTTL, "view-review-ttl", nodeview.DefaultReviewTTL, "how long the node view trusts the API server's review of an agent's token before it asks again (0: review every read); a revoked token is refused at most this long after")
	fs.StringVar(&o.level, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&o.format, "log-format", "text", "log format: text or json")
	return fs
}

func run(args []string) error {
	var o options
	cli.Parse(newFlags(&o), args)
	log, err := cli.NewLogger(o.level, o.format)
	if err != nil {
		return err
	}
	// client-go logs through klog: its lines go to the same logger.
	klogrus.Route(log)
	if o.certFile == "" || o.keyFile == "" {
		return errors.New("--tls-cert and --tls-key are required (the API server calls webhooks over HTTPS only)")
	}
	certs, err := newCertReloader(o.certFile, o.keyFile, log)
	if err != nil {
		return err
	}
	rc, err := restConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	rc.UserAgent = "migpro-admission"
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("API client: %w", err)
	}
	webhook, err := readmit.NewWebhook(readmit.Store{Client: cs}, readmit.WithDomain(o.domain), readmit.WithLogger(log))
	if err != nil {
		return err
	}
	claims, err := readmit.NewClaimWebhook(readmit.Store{Client: cs}, o.deviceClass, readmit.WithDomain(o.domain), readmit.WithLogger(log))
	if err != nil {
		return err
	}
	evictions, err := readmit.NewEvictionGuard(cs.CoreV1(), readmit.WithAgentUsers(o.agentUser), readmit.WithLogger(log))
	if err != nil {
		return err
	}
	recs, err := readmit.NewRecommendationGuard(readmit.Store{Client: cs}, readmit.WithAgentUsers(o.agentUser), readmit.WithLogger(log))
	if err != nil {
		return err
	}
	var cas *x509.CertPool
	if o.clientCA != "" {
		if cas, err = clientCAs(o.clientCA); err != nil {
			return err
		}
	} else {
		log.Warn("no --client-ca: any client that reaches the webhook may post reviews and read the answers (docs/security.md)")
	}
	mux := http.NewServeMux()
	mux.Handle("/mutate", requireClient(cas, webhook))
	mux.Handle("/mutate-claim", requireClient(cas, claims))
	mux.Handle("/validate-eviction", requireClient(cas, evictions))
	mux.Handle("/validate-recommendation", requireClient(cas, recs))
	if o.nodeView {
		// Agents authenticate with their token (TokenReview), not a client
		// certificate: the view is not behind requireClient.
		view, err := nodeview.New(cs, nodeview.NewCachedReviewer(nodeview.TokenReviewer{Reviews: cs.AuthenticationV1().TokenReviews()}, o.reviewTTL), o.agentUser,
			nodeview.WithDomain(o.domain), nodeview.WithLogger(log))
		if err != nil {
			return err
		}
		for _, p := range nodeview.Paths {
			mux.Handle(p, view)
		}
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		TLSConfig: tlsConfig(certs.get, cas)}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", o.listen, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(ln, "", "") }()
	log.WithFields(logrus.Fields{"listen": ln.Addr().String(), "server": rc.Host, "domain": o.domain, "agent_user": o.agentUser, "node_view": o.nodeView}).Info("migpro-admission serving")
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("no --kubeconfig and no in-cluster config: %w", err)
	}
	return cfg, nil
}
