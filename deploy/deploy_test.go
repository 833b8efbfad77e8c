package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/kubernetes/scheme"
)

func TestManifestsDecode(t *testing.T) {
	files, _ := filepath.Glob("kubernetes/*.yaml")
	if len(files) == 0 {
		t.Fatal("no manifests")
	}
	var ds *appsv1.DaemonSet
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range bytes.Split(b, []byte("\n---\n")) {
			obj, gvk, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
			if err != nil {
				t.Fatalf("%s document %d: %v", f, i+1, err)
			}
			if d, ok := obj.(*appsv1.DaemonSet); ok {
				ds = d
			}
			t.Logf("%s: %s", f, gvk.Kind)
		}
	}
	if ds == nil {
		t.Fatal("no DaemonSet among the manifests")
	}
	agentFlags := agentFlagNames(t)
	for _, c := range ds.Spec.Template.Spec.Containers {
		for _, a := range c.Args {
			name := strings.TrimPrefix(strings.SplitN(a, "=", 2)[0], "--")
			if !agentFlags[name] {
				t.Errorf("DaemonSet passes --%s, which migpro-agent does not have", name)
			}
		}
	}
}

func TestSystemdUnitUsesRealFlags(t *testing.T) {
	b, err := os.ReadFile("systemd/migpro-agent.service")
	if err != nil {
		t.Fatal(err)
	}
	flags := agentFlagNames(t)
	var execStart []string // the ExecStart command and its continuation lines
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "ExecStart=") {
			in = true
		}
		if in {
			execStart = append(execStart, line)
			in = strings.HasSuffix(line, "\\")
		}
	}
	if len(execStart) == 0 {
		t.Fatal("no ExecStart in the unit")
	}
	for _, m := range regexp.MustCompile(`--([a-z-]+)`).FindAllStringSubmatch(strings.Join(execStart, " "), -1) {
		if !flags[m[1]] {
			t.Errorf("unit passes --%s, which migpro-agent does not have", m[1])
		}
	}
}

// agentFlagNames reads migpro-agent's double-dash flags from its -h output.
func agentFlagNames(t *testing.T) map[string]bool {
	t.Helper()
	cmd := exec.Command("go", "run", "../cmd/migpro-agent", "-h")
	out, _ := cmd.CombinedOutput() // -h exits non-zero
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+--([a-z][a-z-]*)`).FindAllStringSubmatch(string(out), -1) {
		names[m[1]] = true
	}
	if len(names) < 5 {
		t.Fatalf("could not read migpro-agent's flags:\n%s", out)
	}
	return names
}

// TestSystemdUnitKeepsRuntimeDirectory: /run/migpro holds the telemetry
// directories of running containers, so stopping the service must not remove
// it (systemd removes a RuntimeDirectory on stop unless it is preserved).
func TestSystemdUnitKeepsRuntimeDirectory(t *testing.T) {
	b, err := os.ReadFile("systemd/migpro-agent.service")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string][]string{}
	section := ""
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = line
			continue
		}
		if section != "[Service]" || line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			keys[k] = append(keys[k], v)
		}
	}
	for _, dir := range keys["RuntimeDirectory"] {
		if !strings.Contains(dir, "migpro") {
			continue
		}
		pres := keys["RuntimeDirectoryPreserve"]
		if len(pres) == 0 || (pres[len(pres)-1] != "yes" && pres[len(pres)-1] != "restart") {
			t.Fatalf("RuntimeDirectory=%s without RuntimeDirectoryPreserve=yes: systemd removes every container's telemetry directory when the service stops (RuntimeDirectoryPreserve=%v)", dir, pres)
		}
		if pres[len(pres)-1] == "restart" {
			t.Fatalf("RuntimeDirectoryPreserve=restart still removes /run/migpro on a stop; use yes")
		}
	}
}

// TestDaemonSetHostPID: the telemetry credential check and the collection
// of exited containers need the host's pid namespace (docs/security.md).
func TestDaemonSetHostPID(t *testing.T) {
	b, err := os.ReadFile("kubernetes/daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(b, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ds, ok := obj.(*appsv1.DaemonSet)
	if !ok || !ds.Spec.Template.Spec.HostPID {
		t.Fatalf("the agent's DaemonSet must run with hostPID: true")
	}
}
