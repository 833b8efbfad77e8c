package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.24.1", Main: debug.Module{Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-11-23T20:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	got := fromBuildInfo(bi).Line("migctl")
	want := "migctl v1.2.3 (revision abc123, 2026-11-23T20:00:00Z, modified) go1.24.1"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := fromBuildInfo(&debug.BuildInfo{GoVersion: "go1.24.1"}).Line("x"); got != "x (devel) go1.24.1" {
		t.Fatalf("bare build info: got %q", got)
	}
}

// TestStampedVersion: a version stamped at link time (make image) is what
// the binary reports.
func TestStampedVersion(t *testing.T) {
	defer func(old string) { version = old }(version)
	version = "0.1.0"
	if got := Read().Version; got != "0.1.0" {
		t.Fatalf("Read().Version = %q, want the stamped 0.1.0", got)
	}
}
