package imagebuild

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// hostLibDirs are searched, in order, for a DT_NEEDED library.
var hostLibDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
	"/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"}

// Dep is a shared object a program needs: where it goes in the image and the
// host file it is copied from.
type Dep struct{ Dest, Src string }

// ELFDeps returns the ELF interpreter and every shared library, recursively,
// that the programs need, sorted by Dest. A static program needs none.
func ELFDeps(programs ...string) ([]Dep, error) {
	deps := map[string]Dep{}
	var queue []string
	interps := map[string]bool{}
	need := func(lib string) error {
		dest := filepath.Join(LibDir(), lib)
		if _, ok := deps[dest]; ok || interps[lib] {
			return nil // the loader itself is already there as the interpreter
		}
		src, err := findLib(lib)
		if err != nil {
			return err
		}
		deps[dest] = Dep{Dest: dest, Src: src}
		queue = append(queue, src)
		return nil
	}
	for _, p := range programs {
		interp, libs, err := readELF(p)
		if err != nil {
			return nil, err
		}
		if interp != "" {
			if _, err := os.Stat(interp); err != nil {
				return nil, fmt.Errorf("%s: interpreter: %w", p, err)
			}
			deps[interp] = Dep{Dest: interp, Src: interp}
			interps[filepath.Base(interp)] = true
		}
		for _, l := range libs {
			if err := need(l); err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
		}
	}
	for len(queue) > 0 {
		src := queue[0]
		queue = queue[1:]
		_, libs, err := readELF(src)
		if err != nil {
			return nil, err
		}
		for _, l := range libs {
			if err := need(l); err != nil {
				return nil, fmt.Errorf("%s: %w", src, err)
			}
		}
	}
	out := make([]Dep, 0, len(deps))
	for _, d := range deps {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dest < out[j].Dest })
	return out, nil
}

// readELF returns the program's interpreter (PT_INTERP) and its DT_NEEDED
// libraries.
func readELF(path string) (interp string, libs []string, err error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", nil, fmt.Errorf("read ELF %s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				return "", nil, fmt.Errorf("read the interpreter of %s: %w", path, err)
			}
			interp = string(b[:len(b)-1]) // NUL-terminated
		}
	}
	libs, err = f.ImportedLibraries()
	if err != nil {
		return "", nil, fmt.Errorf("read the libraries of %s: %w", path, err)
	}
	return interp, libs, nil
}

func findLib(name string) (string, error) {
	for _, d := range hostLibDirs {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("shared library %s not found in %v", name, hostLibDirs)
}
