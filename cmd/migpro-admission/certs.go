package main

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// certReloader serves the key pair from disk and loads it again when either
// file's modification time changes (a rotated Secret), checking at most every
// few seconds. A pair that fails to load keeps the previous one.
type certReloader struct {
	certFile, keyFile string
	log               logrus.FieldLogger

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   string
	checked time.Time
}

func newCertReloader(certFile, keyFile string, log logrus.FieldLogger) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, log: log}
	if err := r.load(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *certReloader) stampNow() string {
	var s string
	for _, f := range []string{r.certFile, r.keyFile} {
		if fi, err := os.Stat(f); err == nil {
			s += fi.ModTime().String() + fmt.Sprint(fi.Size())
		}
	}
	return s
}

func (r *certReloader) load() error {
	c, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("TLS key pair %s, %s: %w", r.certFile, r.keyFile, err)
	}
	r.cert, r.stamp = &c, r.stampNow()
	return nil
}

func (r *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.checked) > 5*time.Second {
		r.checked = time.Now()
		if r.stampNow() != r.stamp {
			if err := r.load(); err != nil {
				r.log.WithError(err).Warn("certificate changed but does not load; serving the previous one")
			} else {
				r.log.Info("serving certificate reloaded")
			}
		}
	}
	return r.cert, nil
}
