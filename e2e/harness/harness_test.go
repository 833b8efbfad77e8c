package harness

// Unit tests of the harness's pure parts; they run without root or engines
// (the engines themselves are covered by e2e/smoke_test.go).

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
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

func TestWriteOCIArchive(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "bin"), 0o755)
	os.WriteFile(filepath.Join(root, "bin", "tool"), []byte("#!/bin/sh\n"), 0o755)
	os.Symlink("tool", filepath.Join(root, "bin", "alias"))
	path := filepath.Join(t.TempDir(), "img.tar")
	if err := WriteOCIArchive(path, ImageSpec{Name: "example.test/img:7", Rootfs: root, Cmd: []string{"tool"}}); err != nil {
		t.Fatal(err)
	}
	files := readTar(t, path)
	if string(files["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout = %q", files["oci-layout"])
	}
	var idx ocispec.Index
	if err := json.Unmarshal(files["index.json"], &idx); err != nil || len(idx.Manifests) != 1 {
		t.Fatalf("index.json: %v %s", err, files["index.json"])
	}
	m := idx.Manifests[0]
	if m.Annotations["io.containerd.image.name"] != "example.test/img:7" || m.Annotations[ocispec.AnnotationRefName] != "7" {
		t.Errorf("index annotations = %v", m.Annotations)
	}
	// Every blob must be stored under its own digest.
	for name, b := range files {
		if strings.HasPrefix(name, "blobs/sha256/") {
			sum := sha256.Sum256(b)
			if hex.EncodeToString(sum[:]) != strings.TrimPrefix(name, "blobs/sha256/") {
				t.Errorf("blob %s has digest %x", name, sum)
			}
		}
	}
	var man ocispec.Manifest
	if err := json.Unmarshal(files[blobPath(m)], &man); err != nil || len(man.Layers) != 1 {
		t.Fatalf("manifest: %v", err)
	}
	layer := readTarBytes(t, files[blobPath(man.Layers[0])])
	if string(layer["bin/tool"]) != "#!/bin/sh\n" {
		t.Errorf("layer bin/tool = %q; layer has %v", layer["bin/tool"], keys(layer))
	}
	if _, ok := layer["bin/alias"]; !ok {
		t.Errorf("layer lacks the symlink bin/alias; has %v", keys(layer))
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

func readTar(t *testing.T, path string) map[string][]byte {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return readTarBytes(t, b)
}

func readTarBytes(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		out[h.Name] = data
	}
}

func keys(m map[string][]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
