package harness

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// LogDir is where a failed test's daemon and agent logs are kept:
// $MIGPRO_E2E_LOGS, or /tmp/migpro-e2e-logs. Each test gets a directory of
// its own, named after it.
func LogDir() string {
	return envDir("MIGPRO_E2E_LOGS", filepath.Join(os.TempDir(), "migpro-e2e-logs"))
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// announced holds the tests (each run of one) whose log directory has been
// reported.
var announced sync.Map

// KeepLog copies the log at path into the failed test's directory under
// LogDir, and says where once per test, in one line. A failed test's own
// messages then stay next to its FAIL line instead of above pages of daemon
// output, and the whole logs are still there to read. It does nothing when
// t passed.
func KeepLog(t testing.TB, name, path string) {
	t.Helper()
	if !t.Failed() {
		return
	}
	dir := filepath.Join(LogDir(), unsafeName.ReplaceAllString(t.Name(), "_"))
	b, err := os.ReadFile(path)
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, unsafeName.ReplaceAllString(name, "_")+".log"), b, 0o644)
	}
	if err != nil {
		t.Logf("keep the %s log: %v", name, err)
		return
	}
	if _, done := announced.LoadOrStore(t, true); !done {
		t.Logf("logs kept in %s", dir)
	}
}

// LogTail puts the last n lines of the log at path into a failed test's
// own output (CI keeps that output, not the kept files). It does nothing
// when t passed or the log is empty.
func LogTail(t testing.TB, name, path string, n int) {
	t.Helper()
	if !t.Failed() {
		return
	}
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	t.Logf("the %s log ends:\n%s", name, strings.Join(lines, "\n"))
}
