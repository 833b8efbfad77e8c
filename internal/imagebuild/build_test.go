package imagebuild

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeBin fills a bin directory with a host dynamic executable (/bin/ls,
// linked against the C library as the cgo binaries are) under every name
// the images take, and returns it with a static busybox.
func fakeBin(t *testing.T) Sources {
	t.Helper()
	dir := t.TempDir()
	ls, err := exec.LookPath("ls")
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range Images() {
		for _, f := range img.Files {
			if f.Src != Busybox {
				if err := copyFile(ls, filepath.Join(dir, f.Src)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return Sources{BinDir: dir, Busybox: staticBusybox(t)}
}

// staticBusybox is Debian's busybox-static, which `make test-unit` installs.
func staticBusybox(t *testing.T) string {
	t.Helper()
	const p = "/bin/busybox"
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%v: install busybox-static (make test-unit does, through make e2e-deps-podman)", err)
	}
	return p
}

// Every program in an assembled image finds its loader and libraries inside
// the image: it runs chrooted there.
func TestAssembledProgramsRunInTheImage(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("chroot needs root; make test runs as root")
	}
	src := fakeBin(t)
	for _, img := range Images() {
		root := t.TempDir()
		if err := Assemble(src, img, root); err != nil {
			t.Fatalf("%s: %v", img.Name, err)
		}
		for _, f := range img.Files {
			if !f.Exec || f.Src == Busybox {
				continue
			}
			out, err := exec.Command("chroot", root, f.Dest, "/").CombinedOutput()
			if err != nil {
				t.Errorf("%s: %s does not run in the image: %v\n%s", img.Name, f.Dest, err, out)
			}
		}
		if img.Applets != nil {
			out, err := exec.Command("chroot", root, "/bin/sh", "-c", "cp /usr/local/bin/migpro-hook /tmp/x && mv /tmp/x /tmp/y && cat /tmp/y >/tmp/z && rm /tmp/z 2>&1; ls /tmp").CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "y" {
				t.Errorf("%s: the init container's sh, cp, mv fail: %v\n%s", img.Name, err, out)
			}
		}
		fi, err := os.Stat(filepath.Join(root, "tmp"))
		if err != nil || fi.Mode()&os.ModeSticky == 0 || fi.Mode().Perm() != 0o777 {
			t.Errorf("%s: /tmp is %v, want sticky and world-writable", img.Name, fi.Mode())
		}
	}
}

func TestELFDepsOfAStaticProgramIsEmpty(t *testing.T) {
	deps, err := ELFDeps(staticBusybox(t))
	if err != nil || len(deps) != 0 {
		t.Errorf("ELFDeps(static busybox) = %v, %v; want none", deps, err)
	}
	if _, err := ELFDeps(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("ELFDeps(missing file) = nil error")
	}
}

// Two builds of the same binaries give the same images, and the admission
// image runs as a non-root user.
func TestBuildIsReproducibleAndAdmissionIsNonRoot(t *testing.T) {
	src := fakeBin(t)
	a, err := Build(src, t.TempDir(), Repository, "v0.0.0-test")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build(src, t.TempDir(), Repository, "v0.0.0-test")
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 2 || len(b) != 2 {
		t.Fatalf("built %d and %d images, want 2", len(a), len(b))
	}
	for i := range a {
		if a[i].Manifest != b[i].Manifest {
			t.Errorf("%s: two builds give %s and %s", a[i].Name, a[i].Manifest, b[i].Manifest)
		}
		if filepath.Base(a[i].Path) != ArchiveName(strings.TrimPrefix(strings.Split(a[i].Name, ":")[0], Repository+"/"), "v0.0.0-test") {
			t.Errorf("archive %s for %s", a[i].Path, a[i].Name)
		}
	}
	for _, img := range Images() {
		if img.Name == "migpro-admission" && (img.User == "" || strings.HasPrefix(img.User, "0")) {
			t.Errorf("admission image user %q, want a non-root uid", img.User)
		}
	}
	if _, err := Build(src, t.TempDir(), Repository, "latest"); err == nil {
		t.Error(`Build with tag "latest" = nil error`)
	}
}
