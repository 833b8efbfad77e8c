package telemetry

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/migpro/migpro/internal/quietlog"
	"github.com/sirupsen/logrus"
)

// TestRestoreKeepsContainersItCouldNotSee: an agent in its own pid
// namespace (a DaemonSet without hostPID) sees no container's pid. Restore
// once read that as "exited" and deleted live registrations without a word.
func TestRestoreKeepsContainersItCouldNotSee(t *testing.T) {
	dir := shortDir(t)
	blind := func(int) bool { return false }
	s1, err := New(WithLogger(quietlog.New()), WithStateDir(dir), WithPIDCheck(blind))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s1.Register(Registration{ID: "live", PID: 4242, MIGUUIDs: []string{"MIG-1"}}); err != nil {
		t.Fatal(err)
	}
	// Seen when registered, but from another pid namespace than the
	// restarted agent's.
	s0, err := New(WithLogger(quietlog.New()), WithStateDir(dir), WithPIDCheck(func(int) bool { return true }))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s0.Register(Registration{ID: "elsewhere", PID: 4243, MIGUUIDs: []string{"MIG-1"}}); err != nil {
		t.Fatal(err)
	}
	s0.Close()
	s1.Close()
	if err := os.WriteFile(filepath.Join(dir, "containers", "elsewhere", pidCheckFile), []byte("pid:[1]"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	l := logrus.New()
	l.SetOutput(&logs)
	s2, err := New(WithLogger(quietlog.New()), WithStateDir(dir), WithPIDCheck(blind), WithLogger(l))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	n, err := s2.Restore()
	if err != nil || n != 2 {
		t.Fatalf("Restore = %d, %v; want both live registrations kept (logs:\n%s)", n, err, logs.String())
	}
	for _, id := range []string{"live", "elsewhere"} {
		if _, err := os.Stat(filepath.Join(dir, "containers", id, registrationFile)); err != nil {
			t.Errorf("registration of %s: %v", id, err)
		}
	}
	if got := strings.Count(logs.String(), "cannot see"); got != 2 {
		t.Fatalf("want one line per kept container, got %d:\n%s", got, logs.String())
	}
}
