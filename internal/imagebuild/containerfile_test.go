package imagebuild

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// stage is what a Containerfile stage puts in its image.
type stage struct {
	files      map[string]string // dest -> source ("bin/image-bin/x" or "debian:/path")
	dirs       map[string]string // dest dir -> source dir, for COPY of a directory
	entrypoint []string
	user       string
}

func parseContainerfile(t *testing.T, path string) (map[string]*stage, []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	stages := map[string]*stage{}
	var cur *stage
	var applets []string
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch f[0] {
		case "FROM":
			cur = &stage{files: map[string]string{}, dirs: map[string]string{}}
			stages[f[len(f)-1]] = cur
		case "RUN":
			if m := regexp.MustCompile(`for a in ([a-z ]+); do`).FindStringSubmatch(line); m != nil {
				applets = strings.Fields(m[1])
			}
		case "COPY":
			from := ""
			args := f[1:]
			for len(args) > 0 && strings.HasPrefix(args[0], "--") {
				from = strings.TrimPrefix(args[0], "--from=") + ":"
				args = args[1:]
			}
			dest := args[len(args)-1]
			for _, src := range args[:len(args)-1] {
				switch {
				case strings.HasSuffix(src, "/"):
					cur.dirs[dest] = from + src
				case strings.HasSuffix(dest, "/"):
					cur.files[dest+filepath.Base(src)] = from + src
				default:
					cur.files[dest] = from + src
				}
			}
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(strings.TrimSpace(strings.TrimPrefix(line, "ENTRYPOINT"))), &cur.entrypoint); err != nil {
				t.Fatalf("ENTRYPOINT %q: %v", line, err)
			}
		case "USER":
			cur.user = f[1]
		}
	}
	return stages, applets
}

// cgoDeps returns the loader and libraries of a cgo program, as the agent,
// migctl and the admission server are.
func cgoDeps(t *testing.T) []Dep {
	t.Helper()
	dir := t.TempDir()
	src := "package main\n\n// int one(void) { return 1; }\nimport \"C\"\n\nfunc main() { _ = C.one() }\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module cgoprobe\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-o", "probe", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build a cgo probe: %v\n%s", err, out)
	}
	deps, err := ELFDeps(filepath.Join(dir, "probe"))
	if err != nil {
		t.Fatal(err)
	}
	return deps
}

// The Containerfile gives every image the layout of Images: the same files
// from the same binaries, the loader and C library of a cgo program, the
// same busybox applets, entrypoint and user. Either one drifting fails.
func TestContainerfileMatchesLayout(t *testing.T) {
	stages, applets := parseContainerfile(t, filepath.Join("..", "..", "Containerfile"))
	deps := cgoDeps(t)
	for _, img := range Images() {
		st := stages[img.Name]
		if st == nil {
			t.Errorf("Containerfile has no stage %q", img.Name)
			continue
		}
		want := map[string]string{}
		for _, f := range img.Files {
			if f.Src == Busybox {
				want[f.Dest] = "debian:/bin/busybox"
			} else {
				want[f.Dest] = "bin/image-bin/" + f.Src
			}
		}
		for _, d := range deps {
			want[d.Dest] = "debian:" + d.Dest
		}
		for dest, src := range want {
			if st.files[dest] != src {
				t.Errorf("%s: Containerfile puts %q at %s, the builder puts %q", img.Name, st.files[dest], dest, src)
			}
		}
		for dest, src := range st.files {
			if _, ok := want[dest]; !ok {
				t.Errorf("%s: Containerfile adds %s (from %s), the builder does not", img.Name, dest, src)
			}
		}
		if st.dirs["/tmp/"] == "" {
			t.Errorf("%s: Containerfile gives no /tmp", img.Name)
		}
		if (st.dirs["/bin/"] != "") != (len(img.Applets) > 0) {
			t.Errorf("%s: Containerfile applets dir %q, builder applets %v", img.Name, st.dirs["/bin/"], img.Applets)
		}
		if len(img.Applets) > 0 && !slices.Equal(applets, img.Applets) {
			t.Errorf("%s: Containerfile applets %v, builder %v", img.Name, applets, img.Applets)
		}
		if !slices.Equal(st.entrypoint, img.Entrypoint) || st.user != img.User {
			t.Errorf("%s: Containerfile entrypoint %v user %q, builder %v %q", img.Name, st.entrypoint, st.user, img.Entrypoint, img.User)
		}
	}
}
