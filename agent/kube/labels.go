package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/migpro/migpro/agent"
	"github.com/migpro/migpro/defaults"
)

// Node label keys the agent sets. They are static facts of the node's GPUs,
// written once at start and only when they differ, so they never churn.
const (
	LabelPrefix     = "migpro.dev/"
	LabelProduct    = LabelPrefix + "gpu.product"
	LabelCount      = LabelPrefix + "gpu.count"
	LabelMIGCapable = LabelPrefix + "mig.capable"
	// LabelProfile prefixes one label per offered profile, e.g.
	// migpro.dev/profile.1g.5gb=true.
	LabelProfile = LabelPrefix + "profile."
)

var notLabelValue = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// labelValue makes s a valid label value: invalid runs become "-", at most
// 63 characters, alphanumeric at both ends.
func labelValue(s string) string {
	v := notLabelValue.ReplaceAllString(s, "-")
	if len(v) > 63 {
		v = v[:63]
	}
	return strings.Trim(v, "-_.")
}

// Labels are the node labels the facts make.
func Labels(f agent.NodeFacts) map[string]string {
	l := map[string]string{
		LabelProduct:    labelValue(f.Product),
		LabelCount:      strconv.Itoa(f.GPUs),
		LabelMIGCapable: strconv.FormatBool(f.MIGCapable),
	}
	for _, p := range f.Profiles {
		l[LabelProfile+defaults.ProfileLabel(p)] = "true"
	}
	return l
}

// labelNode sets the labels on the node, removing profile labels of
// profiles no longer offered; it writes nothing when the node already has
// them.
func labelNode(ctx context.Context, cs Client, n *corev1.Node, want map[string]string) (bool, error) {
	node := n.Name
	patch := map[string]any{}
	for k, v := range want {
		if n.Labels[k] != v {
			patch[k] = v
		}
	}
	for k := range n.Labels {
		if _, keep := want[k]; !keep && strings.HasPrefix(k, LabelPrefix) {
			patch[k] = nil
		}
	}
	if len(patch) == 0 {
		return false, nil
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": patch}})
	if err != nil {
		return false, err
	}
	if _, err := cs.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, body, metav1.PatchOptions{}); err != nil {
		return false, fmt.Errorf("label node %s: %w", node, err)
	}
	return true, nil
}

// foreignMIGResources lists what shows that another device plugin hands
// out MIG instances on the node: <domain>/mig-* in its capacity that migpro
// did not register (it never labelled the node), or NVIDIA's device plugin
// with a MIG strategy of single or mixed, which GPU feature discovery
// records in nvidia.com/mig.strategy (single advertises the instances as
// nvidia.com/gpu, and the product label then names a MIG profile).
func foreignMIGResources(n *corev1.Node, domain string) []string {
	var out []string
	if s := n.Labels[nvidiaMIGStrategyLabel]; s == "single" || s == "mixed" {
		out = append(out, fmt.Sprintf("MIG devices (NVIDIA's device plugin with %s=%s)", nvidiaMIGStrategyLabel, s))
	} else if q, ok := n.Status.Capacity[nvidiaGPUResource]; ok && !q.IsZero() && strings.Contains(n.Labels[nvidiaProductLabel], "-MIG-") {
		out = append(out, fmt.Sprintf("%s as MIG devices (%s=%s)", nvidiaGPUResource, nvidiaProductLabel, n.Labels[nvidiaProductLabel]))
	}
	if _, labelled := n.Labels[LabelMIGCapable]; labelled {
		return out
	}
	var res []string
	for name, q := range n.Status.Capacity {
		r := string(name)
		if strings.HasPrefix(r, domain+"/"+defaults.ResourcePrefix) && !q.IsZero() {
			res = append(res, r)
		}
	}
	sort.Strings(res)
	return append(out, res...)
}

// Labels and the resource of NVIDIA's device plugin and GPU feature
// discovery that show it serves MIG devices.
const (
	nvidiaMIGStrategyLabel = "nvidia.com/mig.strategy"
	nvidiaProductLabel     = "nvidia.com/gpu.product"
	nvidiaGPUResource      = corev1.ResourceName("nvidia.com/gpu")
)

// checkNode refuses to run beside another MIG device plugin, then labels
// the node. Reading or labelling the node may be forbidden (RBAC): that is
// said in one line and is not fatal.
func (l *link) checkNode(ctx context.Context, cs Client) error {
	cfg := l.a.Config()
	n, err := cs.CoreV1().Nodes().Get(ctx, cfg.NodeName, metav1.GetOptions{})
	switch {
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		l.log.WithError(err).Warn("cannot read this node: no coexistence check, no node labels (the agent needs get and patch on nodes)")
		return nil
	case apierrors.IsNotFound(err):
		l.log.WithError(err).Warn("this node is not registered with the API server: no coexistence check, no node labels (check --node-name)")
		return nil
	case err != nil:
		l.log.WithError(err).Warn("cannot reach the API server: no coexistence check and no node labels now; the agent is not ready until it answers")
		return nil
	}
	if foreign := foreignMIGResources(n, cfg.Domain); len(foreign) > 0 {
		return fmt.Errorf("another device plugin already advertises %s on node %s: two plugins would hand out the same MIG instances; remove it (or turn its MIG strategy off) before starting migpro", strings.Join(foreign, ", "), cfg.NodeName)
	}
	changed, err := labelNode(ctx, cs, n, Labels(l.a.Facts()))
	if err != nil {
		l.log.WithError(err).Warn("node labels not set")
		return nil
	}
	if changed {
		l.log.WithField("node", cfg.NodeName).Info("node labelled with its GPU facts")
	}
	return nil
}
