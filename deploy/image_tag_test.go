package deploy

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestImageTagIsAppVersion: `make image` tags the images with the chart's
// appVersion, so a chart installed without image.tag pulls what it built.
func TestImageTagIsAppVersion(t *testing.T) {
	b, err := os.ReadFile("helm/migpro/Chart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &chart); err != nil || chart.AppVersion == "" {
		t.Fatalf("Chart.yaml appVersion: %q, %v", chart.AppVersion, err)
	}
	cmd := exec.Command("make", "-s", "image-tag")
	cmd.Dir = ".."
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "IMAGE_TAG=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make -s image-tag: %v", err)
	}
	if tag := strings.TrimSpace(string(out)); tag != chart.AppVersion {
		t.Fatalf("make image tags %q, the chart's appVersion is %q", tag, chart.AppVersion)
	}
}
