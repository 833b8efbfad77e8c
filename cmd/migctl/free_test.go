package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/migpro/migpro/client"
)

// migctl free takes the 8-character ID that status draws in each box.
func TestFreeTakesTheIDStatusPrints(t *testing.T) {
	sock := runAgent(t)
	out, errOut, code := migctl("alloc", "--socket", sock, "--output", "json", "1g.5gb")
	var got client.AllocResponse
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
		t.Fatalf("alloc: exit %d, %q %q", code, out, errOut)
	}
	id := strings.TrimPrefix(got.UUID, "MIG-")[:8]
	if text, _, _ := migctl("status", "--socket", sock); !strings.Contains(text, id) {
		t.Fatalf("status does not draw the ID %s:\n%s", id, text)
	}
	if _, errOut, code := migctl("free", "--socket", sock, id); code != 0 {
		t.Fatalf("free %s: exit %d: %s", id, code, errOut)
	}
	out, _, _ = migctl("status", "--socket", sock, "--output", "json")
	var st client.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil || len(st.Instances) != 0 && st.Instances[0].State == "in-use" {
		t.Fatalf("after free %s: %v, instances %+v", id, err, st.Instances)
	}
	if _, errOut, code := migctl("free", "--socket", sock, "ffffffff"); code != 2 || !strings.Contains(errOut, "no such instance") {
		t.Errorf("free of an unknown ID: exit %d, %q; want 2 and no such instance", code, errOut)
	}
}
