package readmit

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// readConfigMap reads a recommendation's ConfigMap. The webhook reads with
// get. The agent's identity has no get on ConfigMaps (it would read any
// ConfigMap in any namespace, kube-system's included): it reads with an
// empty merge patch, which changes nothing and answers the object, and
// which the API server admits like any update, so the agent policy's
// ConfigMap rule (only labelled migpro-readmit-* ConfigMaps) refuses it for
// every other ConfigMap.
func (s Store) readConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	cms := s.Client.CoreV1().ConfigMaps(namespace)
	if s.ReadByPatch {
		return cms.Patch(ctx, name, types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
	}
	return cms.Get(ctx, name, metav1.GetOptions{})
}
