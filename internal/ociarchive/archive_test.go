package ociarchive

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func sampleRootfs(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "bin", "tool"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("tool", filepath.Join(root, "bin", "alias")); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "img.tar")
	res, err := Write(path, Spec{Name: "example.test/img:7", Rootfs: sampleRootfs(t), Cmd: []string{"tool"}, User: "65532:65532"})
	if err != nil {
		t.Fatal(err)
	}
	files := readTar(t, mustRead(t, path))
	if string(files["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout = %q", files["oci-layout"])
	}
	var idx ocispec.Index
	if err := json.Unmarshal(files["index.json"], &idx); err != nil || len(idx.Manifests) != 1 {
		t.Fatalf("index.json: %v %s", err, files["index.json"])
	}
	m := idx.Manifests[0]
	if m.Annotations[NameAnnotation] != "example.test/img:7" || m.Annotations[ocispec.AnnotationRefName] != "7" {
		t.Errorf("index annotations = %v", m.Annotations)
	}
	if m.Digest != res.Manifest {
		t.Errorf("Write returned manifest %s, index has %s", res.Manifest, m.Digest)
	}
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
	var cfg ocispec.Image
	if err := json.Unmarshal(files[blobPath(man.Config)], &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != "65532:65532" {
		t.Errorf("config user = %q", cfg.Config.User)
	}
	layer := readTar(t, files[blobPath(man.Layers[0])])
	if string(layer["bin/tool"]) != "#!/bin/sh\n" {
		t.Errorf("layer bin/tool = %q", layer["bin/tool"])
	}
	if _, ok := layer["bin/alias"]; !ok {
		t.Error("layer lacks the symlink bin/alias")
	}
}

// The same directory, written twice at different times and with different
// file times, gives the same archive.
func TestWriteIsReproducible(t *testing.T) {
	root := sampleRootfs(t)
	dir := t.TempDir()
	a, err := Write(filepath.Join(dir, "a.tar"), Spec{Name: "example.test/img:1", Rootfs: root})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(root, "bin", "tool"), time1, time1); err != nil {
		t.Fatal(err)
	}
	b, err := Write(filepath.Join(dir, "b.tar"), Spec{Name: "example.test/img:1", Rootfs: root})
	if err != nil {
		t.Fatal(err)
	}
	if a.Manifest != b.Manifest || !bytes.Equal(mustRead(t, filepath.Join(dir, "a.tar")), mustRead(t, filepath.Join(dir, "b.tar"))) {
		t.Errorf("two writes differ: %s and %s", a.Manifest, b.Manifest)
	}
}

func TestWriteRefusesANameWithoutTag(t *testing.T) {
	for _, name := range []string{"example.test/img", "localhost:5000/img"} {
		if _, err := Write(filepath.Join(t.TempDir(), "x.tar"), Spec{Name: name, Rootfs: t.TempDir()}); err == nil {
			t.Errorf("Write(%q) = nil error, want one", name)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readTar(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = data
	}
}

var time1 = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

// The layer is a complete tar, end blocks included: a strict reader reaches
// io.EOF, not a truncated archive.
func TestLayerIsComplete(t *testing.T) {
	layer, err := tarDir(sampleRootfs(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(layer)%512 != 0 || len(layer) < 1024 || !bytes.Equal(layer[len(layer)-1024:], make([]byte, 1024)) {
		t.Fatalf("layer of %d bytes does not end with the two zero blocks of a tar archive", len(layer))
	}
}
