package harness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
)

// RunTask runs a container to completion through the Go client: image in
// namespace ns (already imported), spec options such as
// oci.WithProcessArgs and cdi.WithCDIDevices, Debian runc. It returns the
// process's output and exit code, and removes the container.
func (c *Containerd) RunTask(t testing.TB, ns, id, image string, specOpts ...oci.SpecOpts) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(c.Context(ns), 2*time.Minute)
	defer cancel()
	img, err := c.Client.GetImage(ctx, image)
	if err != nil {
		t.Fatalf("get image %s: %v", image, err)
	}
	opts := append([]oci.SpecOpts{oci.WithImageConfig(img)}, specOpts...)
	ctr, err := c.Client.NewContainer(ctx, id,
		client.WithImage(img),
		client.WithNewSnapshot(id+"-snap", img),
		c.RuntimeOpt(),
		client.WithNewSpec(opts...))
	if err != nil {
		return Result{ExitCode: -1, Err: fmt.Errorf("new container %s: %w", id, err)}
	}
	defer func() {
		if err := ctr.Delete(context.WithoutCancel(ctx), client.WithSnapshotCleanup); err != nil {
			t.Errorf("delete container %s: %v", id, err)
		}
	}()
	var out, errb bytes.Buffer
	task, err := ctr.NewTask(ctx, cio.NewCreator(cio.WithStreams(nil, &out, &errb)))
	if err != nil {
		return Result{ExitCode: -1, Err: fmt.Errorf("new task %s: %w", id, err)}
	}
	defer task.Delete(context.WithoutCancel(ctx), client.WithProcessKill)
	statusC, err := task.Wait(ctx)
	if err != nil {
		return Result{ExitCode: -1, Err: fmt.Errorf("wait task %s: %w", id, err)}
	}
	if err := task.Start(ctx); err != nil {
		return Result{ExitCode: -1, Err: fmt.Errorf("start task %s: %w", id, err)}
	}
	st := <-statusC
	code, _, err := st.Result()
	// Close the IO so the buffers hold everything.
	task.CloseIO(ctx, client.WithStdinCloser)
	if io := task.IO(); io != nil {
		io.Wait()
	}
	r := Result{Stdout: out.String(), Stderr: errb.String(), ExitCode: int(code), Err: err}
	if err == nil && code != 0 {
		r.Err = fmt.Errorf("task %s exited %d", id, code)
	}
	return r
}

// stop tears the daemon down; see StartContainerd.
func (c *Containerd) stop(t testing.TB) {
	if c.Client != nil {
		c.removeAll(t)
		c.Client.Close()
	}
	if err := c.d.stop(15 * time.Second); err != nil {
		t.Errorf("stop containerd: %v", err)
	}
	killShims(t, c.Socket)
	if err := unmountUnder(c.Dir); err != nil {
		t.Errorf("unmount under %s: %v", c.Dir, err)
	}
	KeepLog(t, "containerd", filepath.Join(c.Dir, "containerd.log"))
	if err := os.RemoveAll(c.Dir); err != nil {
		t.Errorf("remove %s: %v", c.Dir, err)
	}
}

// removeAll kills every task and deletes every container in every namespace.
func (c *Containerd) removeAll(t testing.TB) {
	nss, err := c.Client.NamespaceService().List(context.Background())
	if err != nil {
		t.Errorf("list namespaces: %v", err)
		return
	}
	for _, ns := range nss {
		c.RemoveContainers(t, ns)
		// Tasks run in the cgroup /<namespace>/<id>; drop the ones made here.
		m, _ := filepath.Glob("/sys/fs/cgroup/*/" + ns)
		for _, p := range m {
			if !c.cgroupsPre[p] {
				rmdirTree(t, p)
			}
		}
	}
}

// RemoveContainers kills every task and deletes every container (and its
// snapshot) in namespace ns. StartContainerd's cleanup does this for all
// namespaces; call it to clean between steps.
func (c *Containerd) RemoveContainers(t testing.TB, ns string) {
	ctx, cancel := context.WithTimeout(c.Context(ns), 30*time.Second)
	defer cancel()
	ctrs, err := c.Client.Containers(ctx)
	if err != nil {
		t.Errorf("list containers in %s: %v", ns, err)
		return
	}
	for _, ctr := range ctrs {
		if task, err := ctr.Task(ctx, nil); err == nil {
			_ = task.Kill(ctx, syscall.SIGKILL)
			// The shim may exit as its last task dies: "ttrpc: closed" is fine.
			_, err := task.Delete(ctx, client.WithProcessKill)
			if err != nil && !errdefs.IsNotFound(err) && !strings.Contains(err.Error(), "ttrpc: closed") {
				t.Logf("delete task %s/%s: %v", ns, ctr.ID(), err)
			}
		}
		if err := ctr.Delete(ctx, client.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
			t.Logf("delete container %s/%s: %v", ns, ctr.ID(), err)
		}
	}
}

// killShims SIGKILLs any containerd-shim-runc-v2 still serving this daemon
// (matched by its -address argument), by pid.
func killShims(t testing.TB, sock string) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if !strings.HasSuffix(args[0], "containerd-shim-runc-v2") {
			continue
		}
		for i := range args[:len(args)-1] {
			if args[i] == "-address" && args[i+1] == sock {
				t.Logf("killing leftover shim pid %d", pid)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}
