package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/migpro/migpro/telemetry/telemetryapi"
)

// maxAnswer bounds what the client reads of one answer.
const maxAnswer = 16 << 20

// Client talks to a running agent's local API.
type Client struct {
	socket string
	http   *http.Client
}

// New returns a client for the agent listening on socket.
func New(socket string) *Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}
	return &Client{socket: socket, http: &http.Client{Transport: tr, Timeout: 2 * time.Minute}}
}

// Socket is the socket the client dials.
func (c *Client) Socket() string { return c.socket }

// Alloc asks for an instance.
func (c *Client) Alloc(ctx context.Context, req AllocRequest) (AllocResponse, error) {
	var resp AllocResponse
	err := c.do(ctx, http.MethodPost, PathAlloc, req, &resp)
	return resp, err
}

// Free releases and destroys an instance by CDI name or MIG UUID.
func (c *Client) Free(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodPost, PathFree, FreeRequest{Name: name}, nil)
}

// FreeLease releases the instance of one alloc, named by its answer's lease:
// a retry after a lost answer is a no-op once the instance is free, and it
// never frees the instance's next holder.
func (c *Client) FreeLease(ctx context.Context, r AllocResponse) error {
	return c.do(ctx, http.MethodPost, PathFree, FreeRequest{Name: r.UUID, Lease: r.Lease}, nil)
}

// Status reads the node's GPUs and instances.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	err := c.do(ctx, http.MethodGet, PathStatus, nil, &st)
	return st, err
}

// Marks reads the predictor's marks, by container id.
func (c *Client) Marks(ctx context.Context) (map[string]Mark, error) {
	var m map[string]Mark
	err := c.do(ctx, http.MethodGet, PathMarks, nil, &m)
	return m, err
}

// Top reads every registered container's memory, as migctl top shows it.
func (c *Client) Top(ctx context.Context) (telemetryapi.Top, error) {
	var top telemetryapi.Top
	err := c.do(ctx, http.MethodGet, PathTop, nil, &top)
	return top, err
}

// Register registers a container for telemetry, as the OCI hook does.
func (c *Client) Register(ctx context.Context, r telemetryapi.Registration) (telemetryapi.Endpoint, error) {
	var ep telemetryapi.Endpoint
	err := c.do(ctx, http.MethodPost, PathContainers, r, &ep)
	return ep, err
}

// Profiles lists the profiles the node offers, smallest first.
func (c *Client) Profiles(ctx context.Context) ([]string, error) {
	var p []string
	err := c.do(ctx, http.MethodGet, PathProfiles, nil, &p)
	return p, err
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://migpro"+path, body)
	if err != nil {
		return fmt.Errorf("request %s: %w", path, err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return c.unreachable(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("read agent answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		return answerError(resp, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("read agent answer: %w", err)
		}
	}
	return nil
}

// unreachable says why the agent could not be reached, in one line that
// tells a missing agent from a refused socket and from a deadline.
func (c *Client) unreachable(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("the migpro agent at %s did not answer in time: %w", c.socket, err)
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("no permission to use the migpro agent's socket %s (run as root or a member of its group): %w", c.socket, err)
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("no migpro agent at %s (is it running? start it with migpro-agent, or set --socket/%s): %w", c.socket, "MIGPRO_SOCKET", err)
	}
	return fmt.Errorf("cannot reach the migpro agent at %s (is it running?): %w", c.socket, err)
}

// answerError turns an error answer into an error that says what was
// wrong, once, and wraps the sentinel its status code stands for.
func answerError(resp *http.Response, body []byte) error {
	var e Error
	if json.Unmarshal(body, &e) != nil || e.Error == "" {
		e.Error = resp.Status
	}
	switch resp.StatusCode {
	case http.StatusConflict:
		return &answer{msg: e.Error, kind: ErrConflict}
	case http.StatusNotFound:
		return &answer{msg: e.Error, kind: ErrUnknownInstance}
	case http.StatusBadRequest:
		return &BadRequestError{e.Error}
	}
	return errors.New(e.Error)
}

// answer is an error answer: its message is the agent's line, and it
// matches its kind with errors.Is without repeating the kind's text.
type answer struct {
	msg  string
	kind error
}

func (a *answer) Error() string { return a.msg }
func (a *answer) Unwrap() error { return a.kind }

// BadRequestError is the agent refusing the request itself (an unknown
// profile, a malformed body): the caller's input is wrong.
type BadRequestError struct{ Msg string }

func (b *BadRequestError) Error() string { return b.Msg }

// ErrUnknownInstance marks a 404 answer: no instance has that name.
var ErrUnknownInstance = errors.New("no such instance")

// ErrConflict marks answers that mean "not now": must wait, or in use.
var ErrConflict = errors.New("conflict")
