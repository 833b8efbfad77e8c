package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/migpro/migpro/internal/atomicfile"
	"github.com/migpro/migpro/internal/ociarchive"
)

// Image names of the images the harness builds. Both are local-only and are
// never pulled (pods must use imagePullPolicy: Never).
const (
	PauseImageName   = "migpro-e2e.test/pause:1"
	BusyboxImageName = "migpro-e2e.test/busybox:1"
)

// ImageSpec describes a one-layer image made from a directory.
type ImageSpec = ociarchive.Spec

// WriteOCIArchive writes img as an OCI image-layout tar to path (see
// ociarchive.Write).
func WriteOCIArchive(path string, img ImageSpec) error {
	_, err := ociarchive.Write(path, img)
	return err
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

// writeAtomic replaces path with data (see atomicfile.WriteFile).
func writeAtomic(path string, data []byte, mode os.FileMode) error {
	return atomicfile.WriteFile(path, data, mode, atomicfile.Options{})
}
