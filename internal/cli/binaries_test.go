package cli_test

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBinariesHelpVersionBadFlag builds each flag-package binary and checks
// --help and --version exit 0 (help listing the flags), and a bad flag exits 2
// with one line on stderr.
func TestBinariesHelpVersionBadFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("builds binaries")
	}
	bins := map[string]string{ // binary -> a flag its help must list
		"migpro-hook":      "-agent-socket",
		"migpro-agent":     "-simulate",
		"migpro-admission": "-tls-cert",
	}
	dir := t.TempDir()
	for bin, flagName := range bins {
		t.Run(bin, func(t *testing.T) {
			exe := filepath.Join(dir, bin)
			if out, err := exec.Command("go", "build", "-o", exe, "github.com/migpro/migpro/cmd/"+bin).CombinedOutput(); err != nil {
				t.Fatalf("build %s: %v\n%s", bin, err, out)
			}
			for _, arg := range []string{"--help", "-h"} {
				stdout, _, code := runBin(t, exe, arg)
				if code != 0 || !strings.Contains(stdout, flagName) || !strings.Contains(stdout, "-version") {
					t.Errorf("%s %s: exit %d, stdout %q; want exit 0 listing %s and -version", bin, arg, code, stdout, flagName)
				}
			}
			stdout, _, code := runBin(t, exe, "--version")
			if code != 0 || !strings.HasPrefix(stdout, bin+" ") || !strings.Contains(stdout, "go1.") {
				t.Errorf("%s --version: exit %d, stdout %q", bin, code, stdout)
			}
			_, stderr, code := runBin(t, exe, "--no-such-flag")
			if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "no-such-flag") {
				t.Errorf("%s --no-such-flag: exit %d, stderr %q; want 2 and one line", bin, code, stderr)
			}
		})
	}
}

func runBin(t *testing.T, exe string, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), stderr.String(), 0
	case errors.As(err, &exit):
		return stdout.String(), stderr.String(), exit.ExitCode()
	}
	t.Fatalf("run %s: %v", exe, err)
	return "", "", -1
}
