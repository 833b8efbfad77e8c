package harness

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Leftovers of a test process that died without running its cleanups (a
// `go test -timeout` panic, a kill): its daemons die with it (Pdeathsig), but
// shims, containers, mounts and sysctls stay. The first StartContainerd and
// StartKubelet of each process sweep them away.

// kubeletSysctlFile records the sysctls a running harness kubelet changed,
// so a later process can restore them if that one died.
const kubeletSysctlFile = "/run/migpro-e2e-kubelet.sysctls"

var sweepContainerdOnce sync.Once

// sweepStaleContainerd removes private containerd directories whose daemon is
// gone: their containers (runc delete --force), shims, mounts and cgroups.
func sweepStaleContainerd(t testing.TB) {
	sweepContainerdOnce.Do(func() {
		dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "migpro-e2e-containerd-*"))
		for _, dir := range dirs {
			fi, err := os.Stat(dir)
			// A directory younger than a minute may be a daemon starting up.
			if err != nil || !fi.IsDir() || time.Since(fi.ModTime()) < time.Minute {
				continue
			}
			sock := filepath.Join(dir, "containerd.sock")
			if conn, err := net.DialTimeout("unix", sock, time.Second); err == nil {
				conn.Close() // alive: another test process's daemon
				continue
			}
			t.Logf("sweeping stale containerd dir %s", dir)
			nss, _ := os.ReadDir(filepath.Join(dir, "runc"))
			for _, ns := range nss {
				root := filepath.Join(dir, "runc", ns.Name())
				ids, _ := os.ReadDir(root)
				for _, id := range ids {
					_ = exec.Command(RuncPath, "--root", root, "delete", "--force", id.Name()).Run()
				}
			}
			killShims(t, sock)
			for _, ns := range nss {
				m, _ := filepath.Glob("/sys/fs/cgroup/*/" + ns.Name())
				for _, p := range m {
					rmdirTree(t, p) // fails, harmlessly, while others use it
				}
			}
			if err := unmountUnder(dir); err != nil {
				t.Logf("sweep %s: %v", dir, err)
				continue
			}
			os.RemoveAll(dir)
		}
	})
}

// sweepStaleKubelet removes kubelet directories of dead processes and
// restores the sysctls a dead kubelet changed. Call it holding the kubelet
// lock: then no other harness kubelet runs.
func sweepStaleKubelet(t testing.TB) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "migpro-e2e-kubelet-*"))
	for _, dir := range dirs {
		t.Logf("sweeping stale kubelet dir %s", dir)
		if err := unmountUnder(dir); err != nil {
			t.Logf("sweep %s: %v", dir, err)
			continue
		}
		os.RemoveAll(dir)
	}
	b, err := os.ReadFile(kubeletSysctlFile)
	if err != nil {
		return
	}
	t.Logf("restoring sysctls of a kubelet that died: %s", strings.Join(strings.Fields(string(b)), " "))
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			_ = os.WriteFile("/proc/sys/"+k, []byte(v), 0o644)
		}
	}
	for _, p := range kubepodsCgroups() {
		rmdirTree(t, p)
	}
	os.Remove(kubeletSysctlFile)
}

// saveKubeletSysctls records the values to restore (see sweepStaleKubelet).
func saveKubeletSysctls(vals map[string]string) error {
	var b strings.Builder
	for k, v := range vals {
		b.WriteString(k + "=" + v + "\n")
	}
	return writeAtomic(kubeletSysctlFile, []byte(b.String()), 0o644)
}
