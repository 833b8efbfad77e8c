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

// foreignMIGResources lists the MIG resources another device plugin
// advertises on the node: the node has <domain>/mig-* in its capacity, and
// migpro never labelled it, so migpro did not register them.
func foreignMIGResources(n *corev1.Node, domain string) []string {
	if _, labelled := n.Labels[LabelMIGCapable]; labelled {
		return nil
	}
	var out []string
	for name, q := range n.Status.Capacity {
		r := string(name)
		if strings.HasPrefix(r, domain+"/"+defaults.ResourcePrefix) && !q.IsZero() {
			out = append(out, r)
		}
	}
	sort.Strings(out)
	return out
}

// checkNode refuses to run beside another MIG device plugin, then labels
// the node. Reading or labelling the node may be forbidden (RBAC): that is
// said in one line and is not fatal.
func (l *link) checkNode(ctx context.Context, cs Client) error {
	cfg := l.a.Config()
	n, err := cs.CoreV1().Nodes().Get(ctx, cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		l.log.WithError(err).Warn("cannot read this node: no coexistence check, no node labels (the agent needs get and patch on nodes)")
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
