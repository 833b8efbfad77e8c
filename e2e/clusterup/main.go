package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/migpro/migpro/e2e/harness"
)

func main() {
	// The cluster stops on these signals, also while it starts: up runs to
	// its end, then the cleanups run.
	stopped := make(chan os.Signal, 1)
	signal.Notify(stopped, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(stopped)
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: clusterup KUBECONFIG_COPY (make cluster-up)")
		os.Exit(2)
	}
	t := &runner{}
	defer t.cleanup()
	func() {
		defer func() {
			if r := recover(); r != nil {
				if err, _ := r.(error); errors.Is(err, errFatal) {
					return
				}
				panic(r)
			}
		}()
		up(t, os.Args[1])
		<-stopped
		fmt.Println("clusterup: stopping the cluster")
	}()
	if t.failed {
		t.cleanup()
		os.Exit(1)
	}
}

// up starts the cluster and copies its admin kubeconfig to copyTo.
func up(t *runner, copyTo string) {
	start := time.Now()
	cl := harness.StartCluster(t)
	c := harness.StartContainerd(t)
	k := harness.StartKubelet(t, harness.KubeletOptions{Containerd: c, Cluster: cl})
	c.ImportArchive(t, "k8s.io", harness.BusyboxImage(t))
	cl.WaitNodeReady(t, k.NodeName, 60*time.Second)
	b, err := os.ReadFile(cl.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(copyTo), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copyTo, b, 0o600); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("clusterup: node %s Ready in %v (API server %s, kubelet root %s, containerd %s)\n",
		k.NodeName, time.Since(start).Round(time.Second), cl.Server, k.RootDir, c.Socket)
	fmt.Printf("clusterup: export KUBECONFIG=%s\n", copyTo)
}

// errFatal unwinds up after a Fatal.
var errFatal = errors.New("fatal")

// runner is the testing.TB the harness needs, for a program: it logs to
// stdout, runs cleanups last-first, and turns Fatal into an exit.
type runner struct {
	testing.TB // never called: it only gives runner TB's private method
	cleanups   []func()
	failed     bool
}

func (r *runner) Helper()                           {}
func (r *runner) Name() string                      { return "clusterup" }
func (r *runner) Cleanup(f func())                  { r.cleanups = append(r.cleanups, f) }
func (r *runner) Failed() bool                      { return r.failed }
func (r *runner) Log(args ...any)                   { fmt.Println(append([]any{"clusterup:"}, args...)...) }
func (r *runner) Logf(format string, args ...any)   { fmt.Printf("clusterup: "+format+"\n", args...) }
func (r *runner) Error(args ...any)                 { r.failed = true; r.Log(args...) }
func (r *runner) Errorf(format string, args ...any) { r.failed = true; r.Logf(format, args...) }
func (r *runner) Fatal(args ...any)                 { r.Error(args...); panic(errFatal) }
func (r *runner) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	panic(errFatal)
}
func (r *runner) Setenv(k, v string) { _ = os.Setenv(k, v) }
func (r *runner) TempDir() string {
	d, err := os.MkdirTemp("", "migpro-cluster-")
	if err != nil {
		r.Fatal(err)
	}
	r.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func (r *runner) cleanup() {
	for len(r.cleanups) > 0 {
		f := r.cleanups[len(r.cleanups)-1]
		r.cleanups = r.cleanups[:len(r.cleanups)-1]
		f()
	}
}
