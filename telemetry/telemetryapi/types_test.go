package telemetryapi

import (
	"errors"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	good := []Registration{
		{ID: "a"},
		{ID: strings.Repeat("f", 64), PID: 1, MIGUUIDs: []string{"MIG-4f1c2d3e-0000-4000-8000-000000000001", "MIG-GPU-5eb1/1/0"},
			PodNamespace: "kube-system", PodName: "train-0", PodUID: "8d1b6c2e-1f4a-4c1e-9f00-0123456789ab", ContainerName: "main"},
	}
	for _, r := range good {
		if err := r.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", r, err)
		}
	}
	tooMany := make([]string, MaxMIGUUIDs+1)
	for i := range tooMany {
		tooMany[i] = "MIG-1"
	}
	bad := map[string]Registration{
		"empty id":       {},
		"slash":          {ID: "a/b"},
		"dot-dot":        {ID: ".."},
		"long id":        {ID: strings.Repeat("a", 65)},
		"newline":        {ID: "a\n"},
		"negative pid":   {ID: "a", PID: -2},
		"not MIG":        {ID: "a", MIGUUIDs: []string{"GPU-1"}},
		"MIG traversal":  {ID: "a", MIGUUIDs: []string{"MIG-1/../x"}},
		"too many MIGs":  {ID: "a", MIGUUIDs: tooMany},
		"pod name space": {ID: "a", PodName: "a b"},
		"namespace":      {ID: "a", PodNamespace: "-x"},
		"uid":            {ID: "a", PodUID: "x;y"},
	}
	for name, r := range bad {
		if err := r.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Validate = %v, want ErrInvalid", name, err)
		}
	}
	r := Registration{ID: "a", MIGUUIDs: []string{"MIG-1"}}
	c := r.Clone()
	c.MIGUUIDs[0] = "MIG-2"
	if r.MIGUUIDs[0] != "MIG-1" {
		t.Error("Clone shares the UUID slice")
	}
}
