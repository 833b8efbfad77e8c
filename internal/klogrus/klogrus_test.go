package klogrus

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"k8s.io/klog/v2"

	"github.com/migpro/migpro/internal/cli"
)

// TestRoute: after Route, client-go's klog lines (printf-style and
// structured, info and error) come out of the daemon's logger in its
// format, and nothing is written in klog's own format.
func TestRoute(t *testing.T) {
	log, err := cli.NewLogger("info", "json")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	log.SetOutput(&buf)
	Route(log)
	defer klog.ClearLogger()
	klog.Infof("Waiting for caches to sync for %s", "node")
	klog.InfoS("Starting reflector", "type", "*v1.Pod", "resyncPeriod", "0s")
	klog.ErrorS(errors.New("dial tcp 10.0.0.1:443: connect: network is unreachable"), "Failed to watch", "reflector", "pods")
	klog.V(4).Info("too verbose for info")
	klog.Flush()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3 (the V(4) line dropped at info):\n%s", len(lines), buf.String())
	}
	var got []map[string]any
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not one JSON line per klog line: %q: %v", l, err)
		}
		if m["component"] != "klog" {
			t.Errorf("line %q lacks component=klog", l)
		}
		got = append(got, m)
	}
	if got[0]["msg"] != "Waiting for caches to sync for node" || got[0]["level"] != "info" {
		t.Errorf("printf line %v", got[0])
	}
	if got[1]["msg"] != "Starting reflector" || got[1]["type"] != "*v1.Pod" {
		t.Errorf("structured line %v", got[1])
	}
	if got[2]["level"] != "error" || !strings.Contains(got[2]["error"].(string), "network is unreachable") || got[2]["reflector"] != "pods" {
		t.Errorf("error line %v", got[2])
	}
}
