package harness

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// busyboxPath is Debian's busybox-static.
const busyboxPath = "/bin/busybox"

// BusyboxRootfs returns a fresh directory holding a minimal root filesystem:
// the static busybox, a symlink per applet in /bin, and empty /dev, /proc,
// /sys, /tmp, /etc and /run. It is removed when t ends.
func BusyboxRootfs(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := writeBusyboxRootfs(dir); err != nil {
		t.Fatalf("busybox rootfs: %v", err)
	}
	return dir
}

// writeBusyboxRootfs fills dir with the busybox root filesystem.
func writeBusyboxRootfs(dir string) error {
	for _, d := range []string{"bin", "dev", "proc", "sys", "tmp", "etc", "run", "var"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := os.Chmod(filepath.Join(dir, "tmp"), 0o1777); err != nil {
		return err
	}
	if err := copyFile(busyboxPath, filepath.Join(dir, "bin", "busybox"), 0o755); err != nil {
		return fmt.Errorf("copy busybox (run `make e2e-deps`): %w", err)
	}
	out, err := exec.Command(busyboxPath, "--list").Output()
	if err != nil {
		return fmt.Errorf("busybox --list: %w", err)
	}
	for _, applet := range strings.Fields(string(out)) {
		if applet == "busybox" {
			continue
		}
		if err := os.Symlink("busybox", filepath.Join(dir, "bin", applet)); err != nil {
			return err
		}
	}
	files := map[string]string{
		"etc/passwd": "root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n",
		"etc/group":  "root:x:0:\nnogroup:x:65534:\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
