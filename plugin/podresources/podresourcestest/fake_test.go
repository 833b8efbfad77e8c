package podresourcestest

import (
	"context"
	"errors"
	"testing"

	"github.com/migpro/migpro/plugin/podresources"
)

func TestFake(t *testing.T) {
	f := NewFake()
	f.Assign("MIG-a", podresources.PodRef{Namespace: "ns", Name: "p", Container: "c"})
	got, _ := f.AssignedDevices(context.Background())
	got["MIG-x"] = podresources.PodRef{} // the caller's copy
	if again, _ := f.AssignedDevices(context.Background()); len(again) != 1 || again["MIG-a"].Name != "p" {
		t.Errorf("fake = %v", again)
	}
	f.Release("MIG-a")
	f.SetError(errors.New("kubelet down"))
	if _, err := f.AssignedDevices(context.Background()); err == nil {
		t.Error("SetError ignored")
	}
	f.SetError(nil)
	if got, err := f.AssignedDevices(context.Background()); err != nil || len(got) != 0 {
		t.Errorf("after release: %v, %v", got, err)
	}
}
