package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/migpro/migpro/client"
)

// Text status names the pod that holds an instance, as the JSON does, not
// the kubelet that handed it over.
func TestStatusTextNamesThePod(t *testing.T) {
	var in client.StatusInstance
	in.UUID, in.Profile, in.State, in.Owner, in.Pod, in.Healthy = "MIG-11111111-2222-3333-4444-555555555555", "1g.5gb", "in-use", "kubelet", "ml/llm-0", true
	var out bytes.Buffer
	writeStatusText(&out, client.Status{Instances: []client.StatusInstance{in}})
	line := out.String()[strings.Index(out.String(), in.UUID):]
	if !strings.Contains(line, "pod ml/llm-0") || strings.Contains(line, "kubelet") {
		t.Errorf("status line %q: want the pod ml/llm-0 as the holder, not kubelet", line)
	}
}
