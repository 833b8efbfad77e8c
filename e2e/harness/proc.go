package harness

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// daemon is a long-running child process whose output goes to a log file.
type daemon struct {
	name string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// startDaemon starts bin with args, appending stdout and stderr to logPath.
func startDaemon(name, logPath string, env []string, bin string, args ...string) (*daemon, error) {
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s log: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = lf, lf
	// Own process group, so a Ctrl-C of `go test` reaches us first and we
	// stop the daemon in order; and killed with us if the test binary dies
	// without cleaning up (a -timeout panic), so no daemon outlives it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	d := &daemon{name: name, log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		d.err = cmd.Wait()
		lf.Close()
		close(d.done)
	}()
	return d, nil
}

// exited reports whether the process has ended.
func (d *daemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, waits up to grace, then SIGKILLs. Only this process
// (by pid) is signalled.
func (d *daemon) stop(grace time.Duration) error {
	if d.exited() {
		return nil
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		return nil
	case <-time.After(grace):
	}
	_ = d.cmd.Process.Kill()
	select {
	case <-d.done:
		return fmt.Errorf("%s ignored SIGTERM for %v; killed", d.name, grace)
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", d.name, d.cmd.Process.Pid)
	}
}
