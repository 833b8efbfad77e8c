package agent

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/migpro/migpro/gpu"
)

func TestFindNVMLUnderDriverRoot(t *testing.T) {
	root := t.TempDir()
	if _, err := findNVML(root); !errors.Is(err, gpu.ErrNoLibrary) {
		t.Fatalf("empty driver root: %v, want ErrNoLibrary", err)
	}
	lib := filepath.Join(root, "usr/lib64", nvmlLibrary)
	if err := os.MkdirAll(filepath.Dir(lib), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lib, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := findNVML(root); err != nil || got != lib {
		t.Fatalf("findNVML = %q, %v; want %q", got, err, lib)
	}
}

// With a driver root that holds no library, New fails in one line naming
// the root, before NVML is touched.
func TestNewWithDriverRootWithoutLibrary(t *testing.T) {
	root := t.TempDir()
	_, err := New(Config{DriverRoot: root, StateDir: t.TempDir()}, WithLogger(quiet()))
	if err == nil || !errors.Is(err, gpu.ErrNoLibrary) {
		t.Fatalf("New: %v, want ErrNoLibrary naming %s", err, root)
	}
}
