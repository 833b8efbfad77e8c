package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/migpro/migpro/gpu/gputest"
	"github.com/migpro/migpro/telemetry/telemetryapi"
	"github.com/migpro/migpro/telemetry/telemetrytest"
)

func topAgent(t *testing.T) string {
	t.Helper()
	s, sock := telemetrytest.Serve(t)
	if _, err := s.Register(telemetryapi.Registration{ID: "0123456789abcdef", MIGUUIDs: []string{"MIG-a"}, PodNamespace: "ns", PodName: "p", ContainerName: "c"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Register(telemetryapi.Registration{ID: "idle"}); err != nil {
		t.Fatal(err)
	}
	s.PollOnce(gputest.Memory{"MIG-a": {3 << 30, 10 << 30}})
	return sock
}

func TestTopJSONAndText(t *testing.T) {
	sock := topAgent(t)
	var out bytes.Buffer
	if code := runMain([]string{"top", "--socket", sock, "--output", "json"}, &out, &out); code != 0 {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	var top telemetryapi.Top
	if err := json.Unmarshal(out.Bytes(), &top); err != nil || len(top.Containers) != 2 {
		t.Fatalf("json %s: %v", out.String(), err)
	}
	e := top.Containers[0]
	if e.ID != "0123456789abcdef" || e.CurrentBytes != 3<<30 || e.PeakBytes != 3<<30 || e.CapacityBytes != 10<<30 || e.Source != telemetryapi.SourceNVML || e.Samples != 1 {
		t.Errorf("entry %+v", e)
	}
	out.Reset()
	if code := runMain([]string{"top", "--socket", sock}, &out, &out); code != 0 {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	text := out.String()
	for _, want := range []string{"CONTAINER", "0123456789ab ", "ns/p/c", "MIG-a", "3.0GiB", "10.0GiB", "30%", "nvml", "idle", "never"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
}

func TestTopWatch(t *testing.T) {
	sock := topAgent(t)
	var out bytes.Buffer
	if code := runMain([]string{"top", "--socket", sock, "--output", "json", "--watch", "10ms", "--count", "3"}, &out, &out); code != 0 {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	docs := 0
	for dec := json.NewDecoder(&out); dec.More(); docs++ {
		var top telemetryapi.Top
		if err := dec.Decode(&top); err != nil || len(top.Containers) != 2 {
			t.Fatalf("document %d: %v, %+v", docs+1, err, top)
		}
	}
	if docs != 3 {
		t.Fatalf("want 3 JSON documents, got %d", docs)
	}
	if code := runMain([]string{"top", "--count", "2"}, &out, &out); code != 2 {
		t.Errorf("--count without --watch: exit %d", code)
	}
}

func TestTopErrors(t *testing.T) {
	var out bytes.Buffer
	if code := runMain([]string{"top", "--output", "yaml"}, &out, &out); code != 2 {
		t.Errorf("bad output: exit %d", code)
	}
	if code := runMain([]string{"top", "extra"}, &out, &out); code != 2 {
		t.Errorf("extra arg: exit %d", code)
	}
	out.Reset()
	code := runMain([]string{"top", "--socket", filepath.Join(t.TempDir(), "none.sock")}, &out, &out)
	if code != 1 || !strings.Contains(out.String(), "is migpro-agent running?") {
		t.Errorf("agent down: exit %d, %q", code, out.String())
	}
	if code := runMain([]string{"top", "--bogus"}, &out, &out); code != 2 {
		t.Errorf("bad flag: exit %d", code)
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[uint64]string{0: "0B", 1023: "1023B", 1024: "1.0KiB", 1536: "1.5KiB", 10 << 30: "10.0GiB", 1 << 60: "1.0EiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
