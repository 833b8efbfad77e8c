package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileReplacesAtomicallyAndLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	for _, content := range []string{"one", "two"} {
		if err := WriteFile(path, []byte(content), 0o644, Options{Durable: true}); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(path)
		if string(got) != content {
			t.Fatalf("content %q, want %q", got, content)
		}
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v", fi.Mode())
	}
	refused := errors.New("refused")
	err := WriteFile(path, []byte("three"), 0o644, Options{Check: func(string) error { return refused }})
	if !errors.Is(err, refused) {
		t.Fatalf("check error: %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "two" {
		t.Fatalf("a refused write changed the file to %q", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("temp files left: %v", entries)
	}
}

func TestRemoveStaleTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "checkpoint.json")
	stale := filepath.Join(dir, TempPrefix(path)+"123.tmp")
	other := filepath.Join(dir, ".other.json.1.tmp")
	for _, f := range []string{stale, other} {
		os.WriteFile(f, []byte("x"), 0o600)
	}
	RemoveStaleTemps(path)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatal("stale temp of the target survived")
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatal("another file's temp was removed")
	}
}
