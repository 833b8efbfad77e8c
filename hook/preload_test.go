package hook

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestPreloadWith(t *testing.T) {
	for in, want := range map[string]string{
		"":                         ContainerShim + "\n",
		"/usr/lib/libtcmalloc.so":  "/usr/lib/libtcmalloc.so\n" + ContainerShim + "\n",
		"/a.so /b.so\n":            "/a.so /b.so\n" + ContainerShim + "\n",
		"/a.so\n" + ContainerShim:  "/a.so\n" + ContainerShim,
		ContainerShim + "x\n/b.so": ContainerShim + "x\n/b.so\n" + ContainerShim + "\n",
	} {
		if got := string(PreloadWith([]byte(in))); got != want {
			t.Errorf("PreloadWith(%q) = %q, want %q", in, got, want)
		}
	}
}

// The hook adds the shim to the container's /etc/ld.so.preload after the
// image's own entries, read-only, without touching the image's file.
func TestInjectPreloadKeepsImageList(t *testing.T) {
	for name, image := range map[string]*string{
		"image list": ptr("/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4"),
		"no list":    nil,
		"no /etc":    nil,
	} {
		t.Run(name, func(t *testing.T) {
			pid := fakeContainer(t)
			rootfs := t.TempDir()
			if name != "no /etc" {
				os.MkdirAll(filepath.Join(rootfs, "etc"), 0o755)
			}
			if image != nil {
				os.WriteFile(filepath.Join(rootfs, "etc/ld.so.preload"), []byte(*image), 0o644)
			}
			sockDir := t.TempDir()
			if err := Inject(Injection{NSPath: "/proc/" + strconv.Itoa(pid) + "/ns/mnt", Rootfs: rootfs, SocketDir: sockDir}); err != nil {
				t.Fatalf("Inject: %v", err)
			}
			want := ContainerShim + "\n"
			if image != nil {
				want = *image + "\n" + want
			}
			inside := "/proc/" + strconv.Itoa(pid) + "/root" + rootfs
			if b, err := os.ReadFile(inside + ContainerPreload); err != nil || string(b) != want {
				t.Fatalf("preload list inside: %q %v, want %q", b, err, want)
			}
			if opts := mountsUnder(t, pid, rootfs)[rootfs+ContainerPreload]; !strings.HasPrefix(opts, "ro,") {
				t.Errorf("preload list mount options %q", opts)
			}
			host, err := os.ReadFile(filepath.Join(rootfs, "etc/ld.so.preload"))
			if image != nil && string(host) != *image || image == nil && (err != nil || len(host) != 0) {
				t.Errorf("the image's own file changed: %q %v", host, err)
			}
		})
	}
	t.Run("already listed", func(t *testing.T) {
		pid := fakeContainer(t)
		rootfs := t.TempDir()
		os.MkdirAll(filepath.Join(rootfs, "etc"), 0o755)
		os.WriteFile(filepath.Join(rootfs, "etc/ld.so.preload"), []byte(ContainerShim+"\n"), 0o644)
		if err := Inject(Injection{NSPath: "/proc/" + strconv.Itoa(pid) + "/ns/mnt", Rootfs: rootfs, SocketDir: t.TempDir()}); err != nil {
			t.Fatalf("Inject: %v", err)
		}
		if _, ok := mountsUnder(t, pid, rootfs)[rootfs+ContainerPreload]; ok {
			t.Error("mounted a list over one that already names the shim")
		}
	})
}

func ptr[T any](v T) *T { return &v }

// Symlinks at the list or at /etc are refused before anything is mounted.
func TestInjectPreloadRefusesSymlinks(t *testing.T) {
	for name, plant := range map[string]func(r string) error{
		"etc -> /etc": func(r string) error { return os.Symlink("/etc", filepath.Join(r, "etc")) },
		"ld.so.preload -> /etc/passwd": func(r string) error {
			os.MkdirAll(filepath.Join(r, "etc"), 0o755)
			return os.Symlink("/etc/passwd", filepath.Join(r, "etc/ld.so.preload"))
		},
	} {
		t.Run(name, func(t *testing.T) {
			pid, rootfs, err := injectPlanted(t, plant)
			if !errors.Is(err, ErrUnsafeRootfs) {
				t.Fatalf("Inject = %v, want ErrUnsafeRootfs", err)
			}
			if m := mountsUnder(t, pid, rootfs); len(m) != 0 {
				t.Errorf("mounted despite refusal: %v", m)
			}
			if m := mountsUnder(t, pid, "/etc"); len(m) != 0 {
				t.Errorf("mounted over host paths: %v", m)
			}
		})
	}
}
