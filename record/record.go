package record

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/migpro/migpro/telemetry/wire"
)

// Environment variables the shim reads (hook/shim/migpro_shim.c).
const (
	EnvSocket   = "MIGPRO_TELEMETRY_SOCKET"
	EnvInterval = "MIGPRO_TELEMETRY_INTERVAL_MS"
)

// DefaultInterval is the shim's and the NVML poll's default period, the
// agent's 10 Hz.
const DefaultInterval = 100 * time.Millisecond

// Exit codes of a command that could not be run, as env(1) and timeout(1)
// use them.
const (
	ExitNotFound      = 127
	ExitNotExecutable = 126
)

// Config is one recording.
type Config struct {
	// Command is the program and its arguments; the program is looked up
	// in PATH when it has no slash.
	Command []string
	// Env is the command's environment before the recorder's additions
	// (nil: the recorder's own). ExtraEnv entries are set on top of it.
	Env      []string
	ExtraEnv []string
	// Shim is the path of libmigpro-shim.so, added to LD_PRELOAD after any
	// libraries already there. Empty runs without the shim (NVML only).
	Shim string
	// Interval is the shim's sampling period and NVML's poll period
	// (default DefaultInterval).
	Interval time.Duration
	// NVML, when set, is polled every Interval for the memory the
	// command's processes hold.
	NVML Source
	// ForwardSignals passes SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and
	// SIGUSR2 sent to this process on to the command (SIGINT and SIGQUIT
	// only when not typed at a terminal, which delivers them to the
	// command itself).
	ForwardSignals bool
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Log is required: Run refuses without one (muted callers pass
	// internal/quietlog).
	Log logrus.FieldLogger
}

// Result is what a recording gives back.
type Result struct {
	// ExitCode is the command's exit status, or 128+N when signal N killed it.
	ExitCode int
	// Signal is the signal that killed the command, 0 if none did.
	Signal syscall.Signal
	Rows   []Row
	// Start is when the command started; Wall its run time.
	Start time.Time
	Wall  time.Duration
	// NVMLErrors counts failed NVML polls; NVMLFirstError is the first.
	NVMLErrors     int
	NVMLFirstError error
	// Malformed counts datagrams on the socket that were not shim samples.
	Malformed int
}

// Empty reports whether the command made no driver allocation the shim
// saw and NVML never charged it any memory: a program without CUDA calls.
func (r Result) Empty() bool {
	for _, row := range r.Rows {
		if row.Allocs > 0 || row.ShimBytes > 0 || row.NVMLProcess > 0 {
			return false
		}
	}
	return true
}

// StartError is a command that could not be started; Code is 127 when it
// was not found and 126 when it could not be executed.
type StartError struct {
	Code int
	Err  error
}

func (e *StartError) Error() string { return e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// ExitCode is the status a shell would report for it.
func (e *StartError) ExitCode() int { return e.Code }

// Run runs the command to its end and returns its series. A command that
// cannot be started is a *StartError; a command that fails is not an
// error: its status is in the Result.
func Run(c Config) (Result, error) {
	if len(c.Command) == 0 || c.Command[0] == "" {
		return Result{}, errors.New("no command given")
	}
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.Log == nil {
		return Result{}, errors.New("record: no logger (Config.Log)")
	}
	path, err := LookPath(c.Command[0])
	if err != nil {
		return Result{}, err
	}
	if c.Shim != "" {
		if _, err := os.Stat(c.Shim); err != nil {
			return Result{}, fmt.Errorf("shim: %w", err)
		}
	}
	dir, err := os.MkdirTemp("", "migctl-record-")
	if err != nil {
		return Result{}, fmt.Errorf("socket directory: %w", err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "telemetry.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		return Result{}, fmt.Errorf("telemetry socket: %w", err)
	}
	defer conn.Close()
	_ = conn.SetReadBuffer(4 << 20)

	cmd := exec.Command(path, c.Command[1:]...)
	cmd.Args[0] = c.Command[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Stdin, c.Stdout, c.Stderr
	cmd.Env = c.environ(sock)
	var sigs chan os.Signal
	if c.ForwardSignals {
		sigs = make(chan os.Signal, 8)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
		defer signal.Stop(sigs)
	}
	msgs := make(chan stamped, 256)
	readerDone := make(chan struct{})
	var malformed int
	go readSocket(conn, msgs, readerDone, &malformed)

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{}, startError(c.Command[0], err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	col := newCollector(start)
	res := Result{Start: start}
	var tick <-chan time.Time
	if c.NVML != nil {
		t := time.NewTicker(c.Interval)
		defer t.Stop()
		tick = t.C
		col.poll(c.NVML, cmd.Process.Pid, &res)
	}
	var waitErr error
loop:
	for {
		select {
		case m := <-msgs:
			col.shim(m)
		case <-tick:
			col.poll(c.NVML, cmd.Process.Pid, &res)
		case s := <-sigs:
			if forward(s) {
				_ = cmd.Process.Signal(s)
			}
		case waitErr = <-done:
			break loop
		}
	}
	res.Wall = time.Since(start)
	// The exit samples were sent before the processes ended; take what is
	// still queued, then stop the reader.
	_ = conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	for {
		select {
		case m := <-msgs:
			col.shim(m)
			continue
		case <-readerDone:
		}
		break
	}
	for {
		select {
		case m := <-msgs:
			col.shim(m)
			continue
		default:
		}
		break
	}
	res.Rows = col.rows
	res.Malformed = malformed
	res.ExitCode, res.Signal = exitStatus(cmd, waitErr)
	return res, nil
}

// environ is the command's environment: the base, ExtraEnv, and the shim's.
func (c Config) environ(sock string) []string {
	env := c.Env
	if env == nil {
		env = os.Environ()
	}
	env = setEnv(env, c.ExtraEnv...)
	env = setEnv(env, EnvSocket+"="+sock, EnvInterval+"="+strconv.FormatInt(c.Interval.Milliseconds(), 10))
	if c.Shim != "" {
		pre := c.Shim
		if old := getEnv(env, "LD_PRELOAD"); old != "" {
			pre = old + " " + c.Shim
		}
		env = setEnv(env, "LD_PRELOAD="+pre)
	}
	return env
}

func getEnv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// setEnv returns env with each KEY=VALUE of kvs replacing any earlier KEY.
func setEnv(env []string, kvs ...string) []string {
	out := append([]string(nil), env...)
	for _, kv := range kvs {
		key, _, _ := strings.Cut(kv, "=")
		kept := out[:0]
		for _, e := range out {
			if k, _, _ := strings.Cut(e, "="); k != key {
				kept = append(kept, e)
			}
		}
		out = append(kept, kv)
	}
	return out
}

// LookPath finds the command as Run will, with Run's *StartError when it cannot.
func LookPath(name string) (string, error) {
	path, err := exec.LookPath(name)
	if err == nil {
		return path, nil
	}
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, exec.ErrNotFound) && strings.Contains(name, "/") && exists(name) {
		return "", &StartError{Code: ExitNotExecutable, Err: fmt.Errorf("command %q cannot be executed: %w", name, err)}
	}
	return "", &StartError{Code: ExitNotFound, Err: fmt.Errorf("command %q not found", name)}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func startError(name string, err error) error {
	code := ExitNotExecutable
	if errors.Is(err, fs.ErrNotExist) {
		code = ExitNotFound
	}
	return &StartError{Code: code, Err: fmt.Errorf("start %q: %w", name, err)}
}

// forward says whether a signal sent to the recorder should be passed on:
// SIGINT and SIGQUIT typed at the terminal already reached the command,
// which shares the recorder's foreground process group.
func forward(s os.Signal) bool {
	if s != syscall.SIGINT && s != syscall.SIGQUIT {
		return true
	}
	fg, err := unix.IoctlGetInt(0, unix.TIOCGPGRP)
	return err != nil || fg != unix.Getpgrp()
}

func exitStatus(cmd *exec.Cmd, waitErr error) (int, syscall.Signal) {
	st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok {
		if waitErr != nil {
			return 1, 0
		}
		return 0, 0
	}
	if st.Signaled() {
		return 128 + int(st.Signal()), st.Signal()
	}
	return st.ExitStatus(), 0
}

// stamped is a shim sample with the time it was read.
type stamped struct {
	at time.Time
	m  wire.Message
}

func readSocket(conn *net.UnixConn, out chan<- stamped, done chan<- struct{}, malformed *int) {
	defer close(done)
	buf := make([]byte, wire.WireSize+1)
	for {
		n, _, err := conn.ReadFrom(buf)
		if err != nil {
			return
		}
		m, err := wire.Decode(buf[:n])
		if err != nil {
			*malformed++
			continue
		}
		out <- stamped{at: time.Now(), m: m}
	}
}
