package harness

// Unit tests of the harness's pure parts; they run without root or engines
// (the engines themselves are covered by e2e/smoke_test.go).

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestReadCRILog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	content := "2026-01-01T00:00:00.1Z stdout F env=dev0\n" +
		"2026-01-01T00:00:00.2Z stderr P cat: can't \n" +
		"2026-01-01T00:00:00.3Z stderr F open\n" +
		"2026-01-01T00:00:00.4Z stdout F \n"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readCRILog(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "env=dev0\ncat: can't open\n\n"; got != want {
		t.Errorf("readCRILog = %q, want %q", got, want)
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{`/a\040b`: "/a b", "/plain": "/plain", `/t\011x`: "/t\tx"} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestKubeletConfigYAML(t *testing.T) {
	for _, cluster := range []bool{false, true} {
		k := &Kubelet{Dir: "/d", StaticPodDir: "/d/m", PodLogsDir: "/d/l", Address: "127.0.0.1",
			Containerd: &Containerd{Socket: "/c/containerd.sock"}}
		if cluster {
			k.Address, k.Kubeconfig, k.clusterCA = "192.0.2.2", "/d/node.kubeconfig", "/p/ca.crt"
		}
		var cfg map[string]any
		if err := yaml.Unmarshal([]byte(k.configYAML("maxPods: 7\n")), &cfg); err != nil {
			t.Fatalf("cluster=%v: %v", cluster, err)
		}
		want := map[string]any{"address": k.Address, "cgroupDriver": "cgroupfs", "failSwapOn": false,
			"cgroupsPerQOS": false, "staticPodPath": "/d/m", "podLogsDir": "/d/l", "registerNode": cluster,
			"containerRuntimeEndpoint": "unix:///c/containerd.sock", "maxPods": float64(7)}
		for key, v := range want {
			if cfg[key] != v {
				t.Errorf("cluster=%v: %s = %v, want %v", cluster, key, cfg[key], v)
			}
		}
		authn := cfg["authentication"].(map[string]any)
		if _, ok := authn["x509"]; ok != cluster {
			t.Errorf("cluster=%v: authentication = %v", cluster, authn)
		}
	}
}

func TestContainerdTOML(t *testing.T) {
	s := containerdTOML("/x", "/x/c.sock", "/x/runc", containerdConfig{cdiSpecDirs: []string{"/a", "/b"}})
	for _, want := range []string{`cdi_spec_dirs = ["/a", "/b"]`, "restrict_oom_score_adj = true",
		`BinaryName = "/usr/sbin/runc"`, `Root = "/x/runc"`, `address = "/x/c.sock"`, `sandbox = "` + PauseImageName} {
		if !strings.Contains(s, want) {
			t.Errorf("config lacks %q:\n%s", want, s)
		}
	}
}

// failedTB is a test that has failed, recording what is logged to it.
type failedTB struct {
	testing.TB
	failed bool
	logs   []string
}

func (f *failedTB) Helper()      {}
func (f *failedTB) Name() string { return "TestX/sub case" }
func (f *failedTB) Failed() bool { return f.failed }
func (f *failedTB) Logf(format string, args ...any) {
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}

func TestKeepLog(t *testing.T) {
	t.Setenv("MIGPRO_E2E_LOGS", t.TempDir())
	src := filepath.Join(t.TempDir(), "agent.log")
	if err := os.WriteFile(src, []byte("first\nlevel=error msg=\"the last word\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	passed := &failedTB{}
	KeepLog(passed, "agent", src)
	if len(passed.logs) != 0 {
		t.Errorf("a passing test logged %q", passed.logs)
	}
	failed := &failedTB{failed: true}
	KeepLog(failed, "agent", src)
	kept := filepath.Join(LogDir(), "TestX_sub_case", "agent.log")
	b, err := os.ReadFile(kept)
	if err != nil || string(b) != "first\nlevel=error msg=\"the last word\"\n" {
		t.Fatalf("kept copy %s: %q, %v", kept, b, err)
	}
	if len(failed.logs) != 1 || !strings.Contains(failed.logs[0], filepath.Dir(kept)) {
		t.Errorf("a failed test logged %q, want one line naming %s", failed.logs, filepath.Dir(kept))
	}
	KeepLog(failed, "kubelet", src)
	if _, err := os.Stat(filepath.Join(filepath.Dir(kept), "kubelet.log")); err != nil || len(failed.logs) != 1 {
		t.Errorf("a second log: %v, logged %q; want it kept without another line", err, failed.logs)
	}
}

func TestLogTail(t *testing.T) {
	src := filepath.Join(t.TempDir(), "agent.log")
	if err := os.WriteFile(src, []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	passed := &failedTB{}
	LogTail(passed, "agent", src, 2)
	if len(passed.logs) != 0 {
		t.Errorf("a passing test logged %q", passed.logs)
	}
	failed := &failedTB{failed: true}
	LogTail(failed, "agent", src, 2)
	if len(failed.logs) != 1 || !strings.HasSuffix(failed.logs[0], "ends:\ntwo\nthree") {
		t.Errorf("a failed test logged %q, want the last two lines", failed.logs)
	}
}
