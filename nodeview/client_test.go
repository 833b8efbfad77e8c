package nodeview_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/migpro/migpro/nodeview"
)

// A bad --node-view configuration fails at start with one line naming what
// is wrong, never later as a stream of read errors.
func TestClientConfigRefusesWhatCannotWork(t *testing.T) {
	dir := t.TempDir()
	ca, tok := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "token")
	for _, f := range []string{ca, tok} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		cfg  nodeview.ClientConfig
		want string
	}{
		{nodeview.ClientConfig{URL: "http://view:443", CAFile: ca, TokenFile: tok}, "want https://"},
		{nodeview.ClientConfig{URL: "view:443", CAFile: ca, TokenFile: tok}, "want https://"},
		{nodeview.ClientConfig{URL: "https://view:443", TokenFile: tok}, "CA file is required"},
		{nodeview.ClientConfig{URL: "https://view:443", CAFile: filepath.Join(dir, "none"), TokenFile: tok}, "node view: CA"},
		{nodeview.ClientConfig{URL: "https://view:443", CAFile: ca, TokenFile: filepath.Join(dir, "none")}, "audience " + nodeview.Audience},
	} {
		_, err := tc.cfg.RESTConfig("test")
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: %v, want one line saying %q", tc.cfg, err, tc.want)
		}
	}
	rc, err := nodeview.ClientConfig{URL: "https://127.0.0.1:8443", CAFile: ca, TokenFile: tok, ServerName: "migpro-admission.migpro-system.svc"}.RESTConfig("agent")
	if err != nil || rc.BearerTokenFile != tok || rc.ServerName != "migpro-admission.migpro-system.svc" || rc.CAFile != ca {
		t.Errorf("a good configuration: %+v %v", rc, err)
	}
}
