package nodeview

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedappsv1 "k8s.io/client-go/kubernetes/typed/apps/v1"
	typedbatchv1 "k8s.io/client-go/kubernetes/typed/batch/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/migpro/migpro/defaults"
)

// Reads is what the server reads with its own identity: pods (list, watch,
// get), ReplicaSets, Jobs and Namespaces (get). A kubernetes.Interface is
// one.
type Reads interface {
	CoreV1() typedcorev1.CoreV1Interface
	AppsV1() typedappsv1.AppsV1Interface
	BatchV1() typedbatchv1.BatchV1Interface
}

// Server is the node view: an http.Handler for the API server's paths of
// the reads it serves (see the package documentation).
type Server struct {
	reads  Reads
	review Reviewer
	user   string
	domain string
	log    logrus.FieldLogger
	mux    *http.ServeMux
}

// Option adjusts the server.
type Option func(*Server)

// WithLogger logs refusals (debug) and failures (warn) to log.
func WithLogger(log logrus.FieldLogger) Option { return func(s *Server) { s.log = log } }

// WithDomain sets the resource domain: a pending pod is in the view when it
// asks for one of domain's MIG resources (default defaults.Domain).
func WithDomain(d string) Option { return func(s *Server) { s.domain = d } }

// New returns the view for the agent's user name (system:serviceaccount:
// <namespace>:<name>), reading with reads and checking tokens with review.
func New(reads Reads, review Reviewer, agentUser string, opts ...Option) (*Server, error) {
	if reads == nil || review == nil {
		return nil, errors.New("node view: a client and a token reviewer are required")
	}
	if agentUser == "" {
		return nil, errors.New("node view: the agent's user name is required")
	}
	s := &Server{reads: reads, review: review, user: agentUser, domain: defaults.Domain, log: logrus.New()}
	for _, o := range opts {
		o(s)
	}
	s.log = s.log.WithField("component", "node-view")
	m := http.NewServeMux()
	m.Handle("/api/v1/pods", s.authed(s.listPods))
	m.Handle("/api/v1/namespaces/{namespace}/pods", s.authed(s.listPods))
	m.Handle("/api/v1/namespaces/{namespace}/pods/{name}", s.authed(s.getPod))
	m.Handle("/apis/apps/v1/namespaces/{namespace}/replicasets/{name}", s.authed(s.getReplicaSet))
	m.Handle("/apis/batch/v1/namespaces/{namespace}/jobs/{name}", s.authed(s.getJob))
	m.Handle("/api/v1/namespaces/{name}", s.authed(s.getNamespace))
	m.Handle("/", s.authed(func(_ context.Context, _ http.ResponseWriter, r *http.Request, _ string) error {
		return errForbidden(r.Method + " " + r.URL.Path + " is not served: the view serves reads of pods, and gets of ReplicaSets, Jobs and Namespaces")
	}))
	s.mux = m
	return s, nil
}

// Paths are the URL path prefixes the server answers, for a mux that
// serves other things beside it.
var Paths = []string{"/api/", "/apis/"}

// ServeHTTP answers one read.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// handler serves one authenticated read for the caller's node.
type handler func(ctx context.Context, w http.ResponseWriter, r *http.Request, node string) error

// authed checks the caller's bearer token before h, and answers h's error.
func (s *Server) authed(h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log := s.log.WithFields(logrus.Fields{"method": r.Method, "path": r.URL.Path})
		node, err := s.caller(r)
		if err == nil && r.Method != http.MethodGet {
			err = refusal(http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "the view is read-only: "+r.Method+" "+r.URL.Path+" is not served")
		}
		if err == nil {
			log = log.WithField("node", node)
			err = h(r.Context(), w, r, node)
		}
		if err == nil {
			return
		}
		st := statusOf(err)
		if st.Code >= 500 {
			log.WithError(err).Warn("node view: read failed")
		} else {
			log.WithField("code", st.Code).Debug(st.Message)
		}
		writeError(w, err)
	})
}

// caller is the node of the agent that sent r.
func (s *Server) caller(r *http.Request) (string, error) {
	auth := r.Header.Get("Authorization")
	token, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		return "", errUnauthorized("no bearer token (the agent shows a token of its ServiceAccount for audience " + Audience + ")")
	}
	st, err := s.review.Review(r.Context(), strings.TrimSpace(token))
	if err != nil {
		return "", err
	}
	return callerNode(st, s.user)
}
