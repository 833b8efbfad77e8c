package cdi

import (
	"os"
	"path/filepath"
	"strings"
)

// The CDI library's own Cache.WriteSpec also renames a temp file into place,
// but it leaves the file at os.CreateTemp's mode 0600, and migpro's specs must
// be readable by non-root consumers (mode 0644). So the Writer does its own
// atomic write and uses the library to validate the bytes before they become
// visible.
//
// The rename makes a replacement atomic for every reader and across a crash
// of the agent. fsync only adds safety against a power loss, after which the
// MIG instances are gone too (they do not survive a reboot) and /var/run is
// empty; it costs milliseconds per write on a disk, so it is an option
// (WithFsync) for spec directories that outlive a reboot, such as /etc/cdi.

// Temp files are named ".<final name>.<random>.tmp": hidden, and their ".tmp"
// suffix keeps CDI consumers from reading them (they read only .json and
// .yaml).

const specFileMode = 0o644

// removeStaleTemps deletes the temp files a crashed writer left in dir for
// final names starting with prefix: atomicfile.RemoveStaleTemps does this for
// one target, the Writer needs it for every spec of its kind.
func removeStaleTemps(dir, prefix string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, "."+prefix) && strings.HasSuffix(n, ".tmp") {
			_ = os.Remove(filepath.Join(dir, n))
		}
	}
}
