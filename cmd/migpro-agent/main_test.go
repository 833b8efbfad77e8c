package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/migpro/migpro/internal/cli"
)

func TestLogFormat(t *testing.T) {
	log, err := cli.NewLogger("info", "json")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	log.SetOutput(&buf)
	log.WithField("gpu_index", 3).Info("hello")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil || line["msg"] != "hello" || line["gpu_index"] != float64(3) {
		t.Fatalf("json line %q: %v", buf.String(), err)
	}
	if _, err := cli.NewLogger("info", "xml"); err == nil || !strings.Contains(err.Error(), "--log-format") {
		t.Fatalf("--log-format xml: %v", err)
	}
	if err := run(context.Background(), []string{"--log-format", "yaml"}); err == nil || !strings.Contains(err.Error(), "want text or json") {
		t.Fatalf("run --log-format yaml: %v", err)
	}
}
