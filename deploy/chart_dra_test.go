package deploy

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/api/resource/v1"
)

// TestChartDRA: dra.enabled installs the DeviceClass mig.migpro.dev, one
// DeviceClass per profile carrying its extended resource name, the RBAC for
// ResourceSlices, and starts the agent with --dra and the kubelet's plugin
// directories mounted; the default installs none of it, and
// dra.deviceClasses=false (a second release) everything but the classes.
func TestChartDRA(t *testing.T) {
	def := renderChart(t)
	for key := range def.docs {
		if strings.HasPrefix(key, "DeviceClass/") || key == "ClusterRole/migpro-agent-dra" {
			t.Errorf("default install renders %s", key)
		}
	}
	if strings.Contains(def.agentArgs(), "--dra") {
		t.Errorf("default agent args %q", def.agentArgs())
	}

	r := renderChart(t, "--set", "dra.enabled=true", "--set", "dra.profiles={1g.5gb,1g.5gb+me}")
	var all resourceapi.DeviceClass
	r.decode(t, "DeviceClass/mig.migpro.dev", &all)
	if len(all.Spec.Selectors) != 1 || all.Spec.Selectors[0].CEL.Expression != `device.driver == "migpro.dev"` || all.Spec.ExtendedResourceName != nil {
		t.Errorf("mig.migpro.dev: %+v", all.Spec)
	}
	var one resourceapi.DeviceClass
	r.decode(t, "DeviceClass/1g.5gb.mig.migpro.dev", &one)
	if one.Spec.ExtendedResourceName == nil || *one.Spec.ExtendedResourceName != "nvidia.com/mig-1g.5gb" ||
		!strings.Contains(one.Spec.Selectors[0].CEL.Expression, `profile == "1g.5gb"`) {
		t.Errorf("1g.5gb class: %+v", one.Spec)
	}
	var me resourceapi.DeviceClass
	r.decode(t, "DeviceClass/1g.5gb-me.mig.migpro.dev", &me)
	if me.Spec.ExtendedResourceName == nil || *me.Spec.ExtendedResourceName != "nvidia.com/mig-1g.5gb.me" {
		t.Errorf("1g.5gb+me class: %+v", me.Spec)
	}
	var role rbacv1.ClusterRole
	r.decode(t, "ClusterRole/migpro-agent-dra", &role)
	slices := false
	for _, rule := range role.Rules {
		for _, res := range rule.Resources {
			slices = slices || (res == "resourceslices" && strings.Contains(strings.Join(rule.Verbs, ","), "create"))
		}
	}
	if !slices {
		t.Errorf("DRA role cannot create ResourceSlices: %+v", role.Rules)
	}
	args := r.agentArgs()
	for _, want := range []string{"--dra", "--dra-kubelet-dir=/var/lib/kubelet", "--plugin-dir=/var/lib/kubelet/device-plugins"} {
		if !strings.Contains(args, want) {
			t.Errorf("agent args %q lack %s", args, want)
		}
	}
	mounts := map[string]bool{}
	for _, m := range r.ds.Spec.Template.Spec.Containers[0].VolumeMounts {
		mounts[m.MountPath] = true
	}
	if !mounts["/var/lib/kubelet/plugins_registry"] || !mounts["/var/lib/kubelet/plugins"] {
		t.Errorf("agent mounts %v lack the kubelet's plugin directories", mounts)
	}
	if off := renderChart(t, "--set", "dra.enabled=true", "--set", "dra.devicePlugins=false").agentArgs(); !strings.Contains(off, "--plugin-dir= ") {
		t.Errorf("dra.devicePlugins=false: agent args %q keep the device plugins", off)
	}
	// A second release in the cluster leaves the cluster-scoped classes to
	// the first, and still runs the driver with its own RBAC.
	second := renderChart(t, "--set", "dra.enabled=true", "--set", "dra.deviceClasses=false", "--set", "fullnameOverride=migpro-b")
	for key := range second.docs {
		if strings.HasPrefix(key, "DeviceClass/") {
			t.Errorf("dra.deviceClasses=false renders %s", key)
		}
	}
	if _, ok := second.docs["ClusterRole/migpro-b-agent-dra"]; !ok || !strings.Contains(second.agentArgs(), "--dra") {
		t.Errorf("dra.deviceClasses=false dropped the driver: role %v, args %q", ok, second.agentArgs())
	}
}
