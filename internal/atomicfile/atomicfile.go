package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Options tunes WriteFile.
type Options struct {
	// Durable fsyncs the file before the rename and the directory after,
	// so the new content also survives a power loss.
	Durable bool
	// Check runs on the complete temp file before the rename; an error
	// leaves the target untouched and no temp file behind.
	Check func(tempPath string) error
}

// TempPrefix starts the name of every temp file WriteFile makes for target,
// so a caller can find and remove those a crash left behind.
func TempPrefix(target string) string { return "." + filepath.Base(target) + "." }

// WriteFile atomically replaces path with data, with mode perm.
func WriteFile(path string, data []byte, perm os.FileMode, opt Options) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, TempPrefix(path)+"*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name()) // the write already failed; this only tidies
		}
	}()
	if _, err = tmp.Write(data); err == nil {
		if err = tmp.Chmod(perm); err == nil && opt.Durable {
			err = tmp.Sync()
		}
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if opt.Check != nil {
		if err = opt.Check(tmp.Name()); err != nil {
			return err
		}
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if opt.Durable {
		SyncDir(dir)
	}
	return nil
}

// SyncDir makes renames and removals in dir durable. A failure only weakens
// durability, never atomicity, so it is not reported.
func SyncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

// RemoveStaleTemps deletes temp files WriteFile left for target when the
// writing process died between create and rename.
func RemoveStaleTemps(target string) {
	dir := filepath.Dir(target)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	prefix := TempPrefix(target)
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, prefix) && strings.HasSuffix(n, ".tmp") {
			_ = os.Remove(filepath.Join(dir, n)) // a leftover of a crash; best effort
		}
	}
}
