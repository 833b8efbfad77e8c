package podresources

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// Client is the PodResources API client. It is safe for concurrent use.
type Client struct {
	socket   string
	prefix   string
	timeout  time.Duration
	maxBytes int
	conn     *grpc.ClientConn
	api      podresourcesv1.PodResourcesListerClient
}

var _ Lister = (*Client)(nil)

// Option configures a Client.
type Option func(*Client)

// WithSocket sets the kubelet's PodResources socket (default DefaultSocket).
func WithSocket(path string) Option { return func(c *Client) { c.socket = path } }

// WithResourcePrefix keeps only devices of resources whose name starts with
// prefix, e.g. "nvidia.com/mig-". The default keeps every device.
func WithResourcePrefix(prefix string) Option { return func(c *Client) { c.prefix = prefix } }

// WithTimeout bounds each List call whose context has no earlier deadline
// (default 10s).
func WithTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// New makes a client. It does not connect until the first call, so it
// succeeds while the kubelet is down; calls then fail until it is up.
func New(opts ...Option) (*Client, error) {
	c := &Client{socket: DefaultSocket, timeout: 10 * time.Second, maxBytes: 16 << 20}
	for _, o := range opts {
		o(c)
	}
	if c.socket == "" {
		return nil, errors.New("podresources: empty socket path")
	}
	conn, err := grpc.NewClient("unix://"+c.socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(c.maxBytes)))
	if err != nil {
		return nil, fmt.Errorf("podresources: client for %s: %w", c.socket, err)
	}
	c.conn, c.api = conn, podresourcesv1.NewPodResourcesListerClient(conn)
	return c, nil
}

// ErrNoKubelet says the PodResources socket does not exist: no kubelet
// runs on this host (podman or containerd only), so nothing is assigned.
var ErrNoKubelet = errors.New("no kubelet on this host")

// Socket is the PodResources socket the client dials.
func (c *Client) Socket() string { return c.socket }

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// AssignedDevices lists every assigned device with the container it went to.
func (c *Client) AssignedDevices(ctx context.Context) (map[string]PodRef, error) {
	if _, ok := ctx.Deadline(); !ok && c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	// A kubelet that stops leaves its socket behind; a missing socket means
	// no kubelet was ever started here, which callers may take as "nothing
	// assigned" rather than as a failure.
	if _, err := os.Stat(c.socket); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("podresources: %s does not exist: %w", c.socket, ErrNoKubelet)
	}
	resp, err := c.api.List(ctx, &podresourcesv1.ListPodResourcesRequest{})
	if err != nil {
		return nil, fmt.Errorf("podresources: list assigned devices from kubelet at %s: %w", c.socket, err)
	}
	return assigned(resp, c.prefix), nil
}

// assigned flattens a List response into device ID → container.
func assigned(resp *podresourcesv1.ListPodResourcesResponse, prefix string) map[string]PodRef {
	out := map[string]PodRef{}
	for _, p := range resp.GetPodResources() {
		for _, ctr := range p.GetContainers() {
			for _, d := range ctr.GetDevices() {
				if !strings.HasPrefix(d.GetResourceName(), prefix) {
					continue
				}
				for _, id := range d.GetDeviceIds() {
					out[id] = PodRef{Namespace: p.GetNamespace(), Name: p.GetName(), Container: ctr.GetName(), Resource: d.GetResourceName()}
				}
			}
		}
	}
	return out
}
