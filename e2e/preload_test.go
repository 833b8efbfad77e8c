//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/migpro/migpro/e2e/harness"
	"github.com/migpro/migpro/hook/shimtest"
)

// The image's own LD_PRELOAD is kept, with the shim added: a container on a
// migpro CDI device started with LD_PRELOAD=/app/libimg.so (what an image
// using tcmalloc sets) loads libimg.so, whose constructor says so, and the
// shim, whose samples give migctl top the program's exact totals. Before
// the hook preloaded the shim through /etc/ld.so.preload, the spec's
// LD_PRELOAD replaced the container's and libimg.so never loaded.
func TestShimKeepsImageLDPreload(t *testing.T) {
	e := newHookEnv(t)
	a := startAgent(t, "a100-40gb", "--hook", e.hookBin, "--shim", e.art.Shim, "--poll-every", "100ms")
	steps := append(append([]string{}, patternSteps...), "sleep:3000")
	want, err := shimtest.Expect(steps)
	if err != nil {
		t.Fatal(err)
	}
	root := e.rootfs(t)
	src := filepath.Join(t.TempDir(), "img.c")
	const marker = "image preload loaded"
	code := `#include <unistd.h>
__attribute__((constructor)) static void img(void) { write(2, "` + marker + `\n", sizeof "` + marker + `"); }
`
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-O2", "-fPIC", "-shared", "-o", filepath.Join(root, "app", "libimg.so"), src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}

	name := a.mustMigctl(t, "alloc", "1g.5gb")
	uuid := strings.TrimPrefix(name, e2eKind+"=")
	pm := harness.Podman(t)
	flags := append(harness.DeviceFlags(name), "--env", "LD_PRELOAD=/app/libimg.so")
	done := make(chan harness.Result, 1)
	go func() {
		done <- pm.RunRootfs(t, root, flags, append([]string{"/app/pattern"}, steps...)...)
	}()
	c := waitTopPattern(t, a, uuid, want, done)
	checkTopEntry(t, a, c, want)
	r := (<-done).Must(t)
	if n := strings.Count(r.Stderr, marker); n != 1 {
		t.Fatalf("the image's LD_PRELOAD library loaded %d times, want once; stderr:\n%s", n, r.Stderr)
	}
	waitDeregistered(t, a, c.ID)
	a.mustMigctl(t, "free", name)
}
