package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
)

// clientCAs reads the PEM bundle of the CAs whose client certificates may
// post admission reviews (the API server's, configured with a client
// certificate for this webhook in its admission configuration).
func clientCAs(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("client CA %s: no PEM certificate in it", path)
	}
	return pool, nil
}

// tlsConfig serves certs; with a client CA pool it asks every client for a
// certificate and verifies one that is given (the kubelet's probes of
// /healthz give none), and requireClient turns away the webhook paths'
// callers without one.
func tlsConfig(get func(*tls.ClientHelloInfo) (*tls.Certificate, error), cas *x509.CertPool) *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: get}
	if cas != nil {
		c.ClientAuth, c.ClientCAs = tls.VerifyClientCertIfGiven, cas
	}
	return c
}

// requireClient answers 403, with nothing about the request, to a caller
// that presented no certificate the client CA signed: only the API server
// learns what the webhook decides (issue 33, low 6). Without a pool (no
// --client-ca) it lets everyone through.
func requireClient(cas *x509.CertPool, next http.Handler) http.Handler {
	if cas == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
			http.Error(w, "client certificate required", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}
