package gpunode

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/migpro/migpro/agent"
	"github.com/migpro/migpro/gpu"
	"github.com/migpro/migpro/internal/quietlog"
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

// With a driver root that holds no library, Open fails in one line naming
// the root, before NVML is touched.
func TestOpenWithDriverRootWithoutLibrary(t *testing.T) {
	root := t.TempDir()
	_, err := Open(agent.Config{DriverRoot: root, StateDir: t.TempDir()}, quietlog.New())
	if err == nil || !errors.Is(err, gpu.ErrNoLibrary) || !strings.Contains(err.Error(), root) {
		t.Fatalf("Open: %v, want ErrNoLibrary naming %s", err, root)
	}
}
