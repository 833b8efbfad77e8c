package ctl

import (
	"fmt"
	"os"
	"path/filepath"
)

// Auto as a file flag's value asks FindBeside to look beside the binary.
const Auto = "auto"

// FindBeside resolves a file flag: a path as given, or with Auto the first
// of <binary dir>/name and <binary dir>/../lib/migpro/name that exists (the
// layout of the build directory and of the GPU check kit). fix says how to
// get the file when it is nowhere.
func FindBeside(v, name, flag, fix string) (string, error) {
	if v != Auto {
		if _, err := os.Stat(v); err != nil {
			return "", fmt.Errorf("%s: %w", flag, err)
		}
		return v, nil
	}
	bin := "the binary"
	exe, err := os.Executable()
	if err == nil {
		if r, err := filepath.EvalSymlinks(exe); err == nil {
			exe = r
		}
		bin = filepath.Base(exe)
		dir := filepath.Dir(exe)
		for _, p := range []string{filepath.Join(dir, name), filepath.Join(dir, "..", "lib", "migpro", name)} {
			if _, err := os.Stat(p); err == nil {
				return filepath.Clean(p), nil
			}
		}
	}
	return "", fmt.Errorf("%s not found beside %s: %s", name, bin, fix)
}
