package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/migpro/migpro/partitioner"
	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/telemetry/telemetryapi"
)

// Client talks to a running agent's local API.
type Client struct {
	socket string
	http   *http.Client
}

// NewClient returns a client for the agent listening on socket.
func NewClient(socket string) *Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}
	return &Client{socket: socket, http: &http.Client{Transport: tr, Timeout: 2 * time.Minute}}
}

// Alloc asks for an instance.
func (c *Client) Alloc(ctx context.Context, req AllocRequest) (AllocResponse, error) {
	var resp AllocResponse
	err := c.do(ctx, http.MethodPost, pathAlloc, req, &resp)
	return resp, err
}

// Free releases and destroys an instance by CDI name or MIG UUID.
func (c *Client) Free(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodPost, pathFree, FreeRequest{Name: name}, nil)
}

// Status reads the node's GPUs and instances.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	err := c.do(ctx, http.MethodGet, pathStatus, nil, &st)
	return st, err
}

// Marks reads the predictor's marks, by container id.
func (c *Client) Marks(ctx context.Context) (map[string]predictor.Decision, error) {
	var m map[string]predictor.Decision
	err := c.do(ctx, http.MethodGet, "/v1/marks", nil, &m)
	return m, err
}

// Top reads every registered container's memory, as migctl top shows it.
func (c *Client) Top(ctx context.Context) (telemetryapi.Top, error) {
	var top telemetryapi.Top
	err := c.do(ctx, http.MethodGet, "/v1/top", nil, &top)
	return top, err
}

// Register registers a container for telemetry, as the OCI hook does.
func (c *Client) Register(ctx context.Context, r telemetryapi.Registration) (telemetryapi.Endpoint, error) {
	var ep telemetryapi.Endpoint
	err := c.do(ctx, http.MethodPost, "/v1/containers", r, &ep)
	return ep, err
}

// Profiles lists the profiles the node offers, smallest first.
func (c *Client) Profiles(ctx context.Context) ([]string, error) {
	var p []string
	err := c.do(ctx, http.MethodGet, pathProfiles, nil, &p)
	return p, err
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://migpro"+path, body)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the migpro agent at %s (is it running? start it with migpro-agent): %w", c.socket, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var e apiError
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = resp.Status
		}
		switch resp.StatusCode {
		case http.StatusConflict:
			return fmt.Errorf("%s: %w", e.Error, errConflict)
		case http.StatusNotFound:
			return fmt.Errorf("%s: %w", e.Error, partitioner.ErrUnknownInstance)
		case http.StatusBadRequest:
			return &BadRequestError{e.Error}
		}
		return fmt.Errorf("%s", e.Error)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("read agent answer: %w", err)
		}
	}
	return nil
}

// BadRequestError is the agent refusing the request itself (an unknown
// profile, a malformed body): the caller's input is wrong.
type BadRequestError struct{ Msg string }

func (b *BadRequestError) Error() string { return b.Msg }

// errConflict marks answers that mean "not now": must wait, or in use.
var errConflict = fmt.Errorf("conflict")
