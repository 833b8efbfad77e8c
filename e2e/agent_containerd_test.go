//go:build e2e

package e2e

import (
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/pkg/cdi"
	"github.com/containerd/containerd/v2/pkg/oci"

	"github.com/migpro/migpro/e2e/harness"
)

// Issue 3, e2e 2: the same as podman, through containerd's Go client with
// pkg/cdi.WithCDIDevices, and through ctr run --device.
func TestAgentContainerd(t *testing.T) {
	a := startAgent(t, "a100-40gb,h100-80gb")
	c := harness.StartContainerd(t)
	const ns = "migpro-e2e"
	c.ImportArchive(t, ns, harness.BusyboxImage(t))

	viaClient := a.mustMigctl(t, "alloc", "3g.40gb") // only the H100 has it
	viaCtr := a.mustMigctl(t, "alloc", "1g.5gb")     // only the A100 has it
	// The client resolves CDI names from the process-wide cache; point it at
	// the directory the agent writes to.
	harness.ConfigureCDI(t, "/var/run/cdi")

	r := c.RunTask(t, ns, "agent-client", harness.BusyboxImageName,
		oci.WithProcessArgs("sh", "-c", devScript), cdi.WithCDIDevices(viaClient))
	if r.Err != nil || r.ExitCode != 0 {
		t.Fatalf("client run: exit %d, %v\n%s", r.ExitCode, r.Err, r.Combined())
	}
	checkDeviceView(t, r.Combined(), strings.TrimPrefix(viaClient, e2eKind+"="))

	args := append([]string{"-n", ns, "run", "--rm"}, c.CtrRunFlags()...)
	args = append(args, harness.DeviceFlags(viaCtr)...)
	args = append(args, harness.BusyboxImageName, "agent-ctr", "sh", "-c", devScript)
	out := c.Ctr(t, args...).Must(t)
	checkDeviceView(t, out.Combined(), strings.TrimPrefix(viaCtr, e2eKind+"="))

	st := a.status(t)
	gpus := map[string]int{}
	for _, in := range st.Instances {
		gpus[in.Profile] = in.GPU
	}
	if gpus["3g.40gb"] != 1 || gpus["1g.5gb"] != 0 {
		t.Fatalf("instances on the wrong GPUs: %+v", st.Instances)
	}
	for _, name := range []string{viaClient, viaCtr} {
		a.mustMigctl(t, "free", name)
		if specExists(strings.TrimPrefix(name, e2eKind+"=")) {
			t.Errorf("spec of %s left after free", name)
		}
	}
}
