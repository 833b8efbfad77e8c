package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/migpro/migpro/telemetry/telemetryapi"
)

// ErrAgent marks a failure to reach or get an answer from the agent: the
// case the fail-open policy covers.
var ErrAgent = errors.New("agent unavailable")

// maxResponse bounds what the hook reads back.
const maxResponse = 64 << 10

// Client talks to the agent's local API over its unix socket. It speaks a
// minimal HTTP/1.0 with raw syscalls instead of net/http: importing package
// net would make a cgo build of the hook dynamically linked, and a
// dynamically linked hook is exactly what a hostile LD_PRELOAD can hijack.
type Client struct {
	Socket string
	// Timeout bounds each request when Deadline is zero.
	Timeout time.Duration
	// Deadline, when set, is one absolute bound on everything the client
	// does: connect, every write and every read. A server that trickles its
	// answer a byte at a time cannot stretch it.
	Deadline time.Time
}

// Register announces the container and returns its socket directory.
func (c Client) Register(r telemetryapi.Registration) (telemetryapi.Endpoint, error) {
	var ep telemetryapi.Endpoint
	body, err := json.Marshal(r)
	if err != nil {
		return ep, fmt.Errorf("encoding registration: %w", err)
	}
	code, resp, err := c.do("POST", "/v1/containers", body)
	if err != nil {
		return ep, err
	}
	if code != 201 {
		return ep, fmt.Errorf("%w: registering %s: agent answered %d: %s", ErrAgent, r.ID, code, apiMessage(resp))
	}
	if err := json.Unmarshal(resp, &ep); err != nil || ep.Dir == "" {
		return ep, fmt.Errorf("%w: registering %s: unusable answer %q", ErrAgent, r.ID, resp)
	}
	return ep, nil
}

// Deregister tells the agent the container is gone. Unknown ids are fine.
func (c Client) Deregister(id string) error {
	if err := ValidID(id); err != nil {
		return err
	}
	code, resp, err := c.do("DELETE", "/v1/containers/"+url.PathEscape(id), nil)
	if err != nil {
		return err
	}
	if code != 204 && code != 404 {
		return fmt.Errorf("%w: deregistering %s: agent answered %d: %s", ErrAgent, id, code, apiMessage(resp))
	}
	return nil
}

// FailOpen tells the agent that registered container id starts without
// telemetry, and why: the agent ends the registration, logs it and, on a
// cluster, records an Event on the pod. An agent without this endpoint
// answers 404 or 405; the caller then deregisters instead.
func (c Client) FailOpen(id, reason string) error {
	if err := ValidID(id); err != nil {
		return err
	}
	body, err := json.Marshal(telemetryapi.FailOpen{Reason: reason})
	if err != nil {
		return fmt.Errorf("encoding fail-open report: %w", err)
	}
	code, resp, err := c.do("POST", "/v1/containers/"+url.PathEscape(id)+"/fail-open", body)
	if err != nil {
		return err
	}
	if code != 204 {
		return fmt.Errorf("%w: reporting fail-open of %s: agent answered %d: %s", ErrAgent, id, code, apiMessage(resp))
	}
	return nil
}

func apiMessage(b []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error != "" {
		return e.Error
	}
	if len(b) > 200 {
		b = b[:200]
	}
	return string(b)
}

func (c Client) do(method, path string, body []byte) (int, []byte, error) {
	fail := func(what string, err error) (int, []byte, error) {
		return 0, nil, fmt.Errorf("%w: %s %s: %s: %w", ErrAgent, method, c.Socket, what, err)
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fail("socket", err)
	}
	defer unix.Close(fd)
	deadline := c.Deadline
	if deadline.IsZero() {
		deadline = time.Now().Add(c.Timeout)
	}
	// Before every blocking call the socket timeouts are set to what is left
	// of the one deadline (unix sockets honour SO_SNDTIMEO on connect), so a
	// hung or trickling agent cannot hang the start past it.
	arm := func() error {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("deadline of %v exceeded", c.Timeout)
		}
		if left < time.Microsecond {
			left = time.Microsecond
		}
		tv := unix.NsecToTimeval(left.Nanoseconds())
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); err != nil {
			return err
		}
		return unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	}
	if err := arm(); err != nil {
		return fail("timeout", err)
	}
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: c.Socket}); err != nil {
		return fail("connect", err)
	}
	var req bytes.Buffer
	fmt.Fprintf(&req, "%s %s HTTP/1.0\r\nHost: migpro-agent\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", method, path, len(body))
	req.Write(body)
	for b := req.Bytes(); len(b) > 0; {
		if err := arm(); err != nil {
			return fail("write", err)
		}
		n, err := unix.Write(fd, b)
		if err != nil {
			return fail("write", err)
		}
		b = b[n:]
	}
	resp := make([]byte, 0, 4096)
	buf := make([]byte, 4096)
	for len(resp) <= maxResponse {
		if err := arm(); err != nil {
			return fail("read", err)
		}
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fail("read", err)
		}
		if n == 0 {
			break
		}
		resp = append(resp, buf[:n]...)
	}
	code, payload, err := parseResponse(resp)
	if err != nil {
		return fail("response", err)
	}
	return code, payload, nil
}

// parseResponse splits an HTTP/1.x response into status and body. An
// HTTP/1.0 request is never answered chunked, and the connection closes
// after the body.
func parseResponse(b []byte) (int, []byte, error) {
	if len(b) > maxResponse {
		return 0, nil, fmt.Errorf("larger than %d bytes", maxResponse)
	}
	head, body, ok := bytes.Cut(b, []byte("\r\n\r\n"))
	if !ok {
		return 0, nil, errors.New("no end of headers")
	}
	lines := bytes.Split(head, []byte("\r\n"))
	f := bytes.Fields(lines[0])
	if len(f) < 2 || !bytes.HasPrefix(f[0], []byte("HTTP/1.")) {
		return 0, nil, fmt.Errorf("bad status line %q", lines[0])
	}
	code, err := strconv.Atoi(string(f[1]))
	if err != nil || code < 100 || code > 599 {
		return 0, nil, fmt.Errorf("bad status %q", f[1])
	}
	for _, l := range lines[1:] {
		k, v, _ := bytes.Cut(l, []byte(":"))
		if bytes.EqualFold(bytes.TrimSpace(k), []byte("Content-Length")) {
			n, err := strconv.Atoi(string(bytes.TrimSpace(v)))
			if err != nil || n < 0 || n > len(body) {
				return 0, nil, fmt.Errorf("bad content length %q for %d body bytes", v, len(body))
			}
			body = body[:n]
		}
	}
	return code, body, nil
}
