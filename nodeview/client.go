package nodeview

import (
	"errors"
	"fmt"
	"net/url"
	"os"

	"k8s.io/client-go/rest"
)

// DefaultTokenFile is where the agent's DaemonSet mounts its token for the
// view (a projected ServiceAccount token of audience Audience).
const DefaultTokenFile = "/var/run/secrets/migpro.dev/node-view/token" //nolint:gosec // a path, not a credential

// ClientConfig is how a node agent reaches the view: the agent's reads of
// pods, ReplicaSets, Jobs and Namespaces go there, its writes to the API
// server.
type ClientConfig struct {
	// URL of the view, https://host:port (migpro-admission's Service).
	URL string
	// CAFile holds the PEM CA of the view's serving certificate.
	CAFile string
	// ServerName is the name the certificate is checked against, when the
	// URL's host is not it (an address); default the URL's host.
	ServerName string
	// TokenFile holds the agent's token for Audience, re-read as it is
	// rotated; default DefaultTokenFile.
	TokenFile string
}

// RESTConfig is the client configuration of the view, for userAgent. It
// fails when the URL is not https or the CA or token file cannot be read.
func (c ClientConfig) RESTConfig(userAgent string) (*rest.Config, error) {
	u, err := url.Parse(c.URL)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("node view: URL %q: want https://host[:port]", c.URL)
	}
	if c.CAFile == "" {
		return nil, errors.New("node view: a CA file is required (the view's certificate is checked)")
	}
	if _, err := os.ReadFile(c.CAFile); err != nil {
		return nil, fmt.Errorf("node view: CA: %w", err)
	}
	tok := c.TokenFile
	if tok == "" {
		tok = DefaultTokenFile
	}
	if _, err := os.Stat(tok); err != nil {
		return nil, fmt.Errorf("node view: token (a projected ServiceAccount token of audience %s): %w", Audience, err)
	}
	return &rest.Config{Host: c.URL, BearerTokenFile: tok, UserAgent: userAgent,
		TLSClientConfig: rest.TLSClientConfig{CAFile: c.CAFile, ServerName: c.ServerName}}, nil
}
