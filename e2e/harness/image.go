package harness

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Image names of the images the harness builds. Both are local-only and are
// never pulled (pods must use imagePullPolicy: Never).
const (
	PauseImageName   = "migpro-e2e.test/pause:1"
	BusyboxImageName = "migpro-e2e.test/busybox:1"
)

// ImageSpec describes a one-layer image made from a directory.
type ImageSpec struct {
	// Name is the full reference, e.g. "migpro-e2e.test/busybox:1".
	Name string
	// Rootfs is the directory packed as the only layer.
	Rootfs     string
	Entrypoint []string
	Cmd        []string
	Env        []string
}

// WriteOCIArchive writes img as an OCI image-layout tar to path, with the
// io.containerd.image.name annotation that `ctr images import` and
// Containerd.ImportArchive need, and the OCI ref name that `podman load` uses.
func WriteOCIArchive(path string, img ImageSpec) error {
	layer, err := tarDir(img.Rootfs)
	if err != nil {
		return fmt.Errorf("pack layer from %s: %w", img.Rootfs, err)
	}
	layerDesc := blobDesc(ocispec.MediaTypeImageLayer, layer)
	cfg, err := json.Marshal(ocispec.Image{
		Platform: ocispec.Platform{Architecture: runtime.GOARCH, OS: "linux"},
		Config:   ocispec.ImageConfig{Entrypoint: img.Entrypoint, Cmd: img.Cmd, Env: img.Env},
		RootFS:   ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{layerDesc.Digest}},
	})
	if err != nil {
		return err
	}
	cfgDesc := blobDesc(ocispec.MediaTypeImageConfig, cfg)
	manifest, err := json.Marshal(ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    cfgDesc,
		Layers:    []ocispec.Descriptor{layerDesc},
	})
	if err != nil {
		return err
	}
	mDesc := blobDesc(ocispec.MediaTypeImageManifest, manifest)
	tag := img.Name[strings.LastIndex(img.Name, ":")+1:]
	mDesc.Annotations = map[string]string{
		"io.containerd.image.name": img.Name,
		ocispec.AnnotationRefName:  tag,
	}
	mDesc.Platform = &ocispec.Platform{Architecture: runtime.GOARCH, OS: "linux"}
	index, err := json.Marshal(ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{mDesc},
	})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	files := []struct {
		name string
		data []byte
	}{
		{ocispec.ImageLayoutFile, []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", index},
		{blobPath(cfgDesc), cfg},
		{blobPath(layerDesc), layer},
		{blobPath(mDesc), manifest},
	}
	for _, f := range files {
		if err := add(f.name, f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return writeAtomic(path, buf.Bytes(), 0o644)
}

func blobDesc(mediaType string, b []byte) ocispec.Descriptor {
	sum := sha256.Sum256(b)
	return ocispec.Descriptor{MediaType: mediaType, Size: int64(len(b)),
		Digest: digest.NewDigestFromEncoded(digest.SHA256, hex.EncodeToString(sum[:]))}
}

func blobPath(d ocispec.Descriptor) string {
	return "blobs/sha256/" + d.Digest.Encoded()
}

// tarDir packs dir (regular files, directories, symlinks) as an
// uncompressed layer owned by root.
func tarDir(dir string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		} else if !info.Mode().IsRegular() && !info.IsDir() {
			return nil // devices, sockets: not part of an image
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		h.Name, h.Uid, h.Gid, h.Uname, h.Gname = rel, 0, 0, "", ""
		if info.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			_, err = tw.Write(b)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), tw.Close()
}

// writeAtomic writes data to a temp file next to path and renames it.
func writeAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := os.Chmod(tmp.Name(), mode); err != nil || werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, errors.Join(werr, cerr, err))
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

var (
	imagesOnce sync.Once
	imagesDir  string
	imagesErr  error
)

// buildImages writes the pause and busybox archives once per test process
// into CacheDir()/images. Each process rewrites them (atomically), so they
// never go stale against the harness code.
func buildImages() (string, error) {
	imagesOnce.Do(func() {
		imagesDir = filepath.Join(CacheDir(), "images")
		imagesErr = writeImages(imagesDir)
	})
	return imagesDir, imagesErr
}

func writeImages(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "migpro-e2e-images-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	// pause: the static Go program in ./pause, alone in the image.
	pauseRoot := filepath.Join(work, "pause")
	if err := os.MkdirAll(pauseRoot, 0o755); err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(pauseRoot, "pause"),
		"github.com/migpro/migpro/e2e/harness/pause")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build pause: %w: %s", err, out)
	}
	if err := WriteOCIArchive(filepath.Join(dir, "pause.tar"), ImageSpec{
		Name: PauseImageName, Rootfs: pauseRoot, Entrypoint: []string{"/pause"},
	}); err != nil {
		return fmt.Errorf("pause image: %w", err)
	}

	bbRoot := filepath.Join(work, "busybox")
	if err := writeBusyboxRootfs(bbRoot); err != nil {
		return fmt.Errorf("busybox rootfs: %w", err)
	}
	if err := WriteOCIArchive(filepath.Join(dir, "busybox.tar"), ImageSpec{
		Name: BusyboxImageName, Rootfs: bbRoot, Cmd: []string{"sh"},
		Env: []string{"PATH=/bin"},
	}); err != nil {
		return fmt.Errorf("busybox image: %w", err)
	}
	return nil
}

// PauseImage returns the path of an OCI archive named PauseImageName whose
// entrypoint waits for SIGTERM: the pod sandbox image.
func PauseImage(t testing.TB) string {
	t.Helper()
	dir, err := buildImages()
	if err != nil {
		t.Fatalf("build e2e images: %v", err)
	}
	return filepath.Join(dir, "pause.tar")
}

// BusyboxImage returns the path of an OCI archive named BusyboxImageName
// holding static busybox with its applets in /bin (default command "sh").
func BusyboxImage(t testing.TB) string {
	t.Helper()
	dir, err := buildImages()
	if err != nil {
		t.Fatalf("build e2e images: %v", err)
	}
	return filepath.Join(dir, "busybox.tar")
}
