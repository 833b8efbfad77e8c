package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/sirupsen/logrus"

	"github.com/migpro/migpro/internal/cli"
	"github.com/migpro/migpro/internal/quietlog"
)

// Every flag the manifest's Deployment passes exists.
func TestManifestFlagsExist(t *testing.T) {
	b, err := os.ReadFile("../../deploy/kubernetes/admission.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fs := newFlags(&options{})
	checked := 0
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		d, ok := obj.(*appsv1.Deployment)
		if !ok {
			continue
		}
		for _, a := range d.Spec.Template.Spec.Containers[0].Args {
			name := strings.TrimPrefix(strings.SplitN(a, "=", 2)[0], "--")
			if fs.Lookup(name) == nil {
				t.Errorf("the Deployment passes --%s, which migpro-admission does not have", name)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no Deployment args found")
	}
}

func TestRunNeedsTLS(t *testing.T) {
	err := run([]string{"--listen", "127.0.0.1:0"})
	if err == nil || !strings.Contains(err.Error(), "--tls-cert") {
		t.Fatalf("want a clear TLS error, got %v", err)
	}
	if err := run([]string{"--tls-cert", "/nonexistent", "--tls-key", "/nonexistent"}); err == nil || !strings.Contains(err.Error(), "/nonexistent") {
		t.Fatalf("want an error naming the file, got %v", err)
	}
}

func writePair(t *testing.T, dir, cn string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
}

func servedCN(t *testing.T, r *certReloader) string {
	t.Helper()
	c, err := r.get(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf.Subject.CommonName
}

func TestCertReloadOnRotation(t *testing.T) {
	dir := t.TempDir()
	writePair(t, dir, "first")
	r, err := newCertReloader(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), quietlog.New())
	if err != nil {
		t.Fatal(err)
	}
	if cn := servedCN(t, r); cn != "first" {
		t.Fatalf("serves %q", cn)
	}
	writePair(t, dir, "second")
	later := time.Now().Add(time.Minute) // a new mtime even on coarse clocks
	os.Chtimes(filepath.Join(dir, "tls.crt"), later, later)
	r.checked = time.Time{} // skip the check interval
	if cn := servedCN(t, r); cn != "second" {
		t.Fatalf("after rotation serves %q, want second", cn)
	}
	// A broken pair keeps the last good one.
	os.WriteFile(filepath.Join(dir, "tls.key"), []byte("junk"), 0o600)
	os.Chtimes(filepath.Join(dir, "tls.key"), later.Add(time.Minute), later.Add(time.Minute))
	r.checked = time.Time{}
	if cn := servedCN(t, r); cn != "second" {
		t.Fatalf("after a broken rotation serves %q, want the previous one", cn)
	}
}

func TestLogFormatFlag(t *testing.T) {
	if err := run([]string{"--log-format", "yaml"}); err == nil || !strings.Contains(err.Error(), "want text or json") {
		t.Fatalf("--log-format yaml: %v", err)
	}
	log, err := cli.NewLogger("debug", "json")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := log.Formatter.(*logrus.JSONFormatter); !ok {
		t.Fatalf("--log-format json gave %T", log.Formatter)
	}
}
