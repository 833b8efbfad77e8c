package imagebuild

import (
	"path"
	"testing"

	"github.com/migpro/migpro/gpu/simgpu"
)

// The agent image ships the simulated driver's stubs where migpro-agent
// --simulate finds them by default (../lib/migpro/simdriver from its own
// directory), so the chart's simulate value gives specs that carry the
// simulated driver.
func TestAgentImageShipsTheSimulatedDriver(t *testing.T) {
	var agent *Image
	for _, img := range Images() {
		if img.Name == "migpro-agent" {
			agent = &img
		}
	}
	if agent == nil {
		t.Fatal("no migpro-agent image")
	}
	files := map[string]bool{}
	for _, f := range agent.Files {
		files[f.Dest] = true
	}
	dir := path.Join(path.Dir(agent.Entrypoint[0]), "..", "lib", "migpro", "simdriver")
	for _, stub := range simgpu.StubFiles {
		if !files[path.Join(dir, stub)] {
			t.Errorf("agent image lacks %s", path.Join(dir, stub))
		}
	}
}
