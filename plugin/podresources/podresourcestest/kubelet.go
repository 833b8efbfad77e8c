package podresourcestest

import (
	"context"
	"net"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// kubelet serves the PodResources API with a fixed answer.
type kubelet struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
	resp *podresourcesv1.ListPodResourcesResponse
}

func (k *kubelet) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	return k.resp, nil
}

// ServeKubelet serves the kubelet's PodResources API, answering every List
// with resp, on a unix socket in a fresh directory until tb ends; it returns
// the socket's path. Fake is the Lister to use where no gRPC is wanted.
func ServeKubelet(tb testing.TB, resp *podresourcesv1.ListPodResourcesResponse) string {
	tb.Helper()
	sock := filepath.Join(tb.TempDir(), "kubelet.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		tb.Fatal(err)
	}
	s := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(s, &kubelet{resp: resp})
	go func() { _ = s.Serve(lis) }()
	tb.Cleanup(s.Stop)
	return sock
}
