package cdi

import (
	"slices"
	"testing"

	"github.com/migpro/migpro/internal/quietlog"
	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"
	specs "tags.cncf.io/container-device-interface/specs-go"
)

// Edits made per instance (the agent's telemetry hook, whose arguments name
// the instance) land in that instance's spec alone, after the extra edits.
func TestInstanceEditsNameTheirInstance(t *testing.T) {
	d := newDriverWithInstance(t)
	w, err := NewWriter(WithLogger(quietlog.New()), WithSpecDir(t.TempDir()), WithExtraEdits(specs.ContainerEdits{Env: []string{"EXTRA=1"}}),
		WithInstanceEdits(func(i Instance) specs.ContainerEdits {
			return specs.ContainerEdits{Env: []string{"EACH=" + i.UUID},
				Hooks: []*specs.Hook{{HookName: "createRuntime", Path: "/bin/hook", Args: []string{"hook", "--instance", i.UUID}}}}
		}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(testInstance, d.paths); err != nil {
		t.Fatal(err)
	}
	path, _ := w.SpecPath(testInstance.UUID)
	s, err := cdiapi.ReadSpec(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	e := s.Devices[0].ContainerEdits
	extra, each := slices.Index(e.Env, "EXTRA=1"), slices.Index(e.Env, "EACH="+testInstance.UUID)
	if extra < 0 || each < extra {
		t.Errorf("env %v: want EXTRA=1, then EACH=<uuid>", e.Env)
	}
	if len(e.Hooks) != 1 || !slices.Equal(e.Hooks[0].Args, []string{"hook", "--instance", testInstance.UUID}) {
		t.Errorf("hooks %+v, want one naming %s", e.Hooks, testInstance.UUID)
	}
}
