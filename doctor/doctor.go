package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/migpro/migpro/defaults"
)

// Status is a check's outcome.
type Status string

// Statuses. Only StatusFail makes the report fail.
const (
	StatusOK   Status = "ok"
	StatusWarn Status = "warn"
	StatusFail Status = "fail"
	StatusSkip Status = "skip"
)

// Exit codes of `migctl doctor`.
const (
	// ExitOK: no check failed (warnings allowed).
	ExitOK = 0
	// ExitFailed: at least one check failed.
	ExitFailed = 1
	// ExitUsage: bad command line (migctl's convention).
	ExitUsage = 2
)

// Check is one line of the report.
type Check struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Report is every check, in order.
type Report struct {
	Simulated string  `json:"simulated,omitempty"`
	Checks    []Check `json:"checks"`
}

// Failed reports whether any check failed.
func (r Report) Failed() bool {
	for _, c := range r.Checks {
		if c.Status == StatusFail {
			return true
		}
	}
	return false
}

// ExitCode is ExitFailed when a check failed, else ExitOK.
func (r Report) ExitCode() int {
	if r.Failed() {
		return ExitFailed
	}
	return ExitOK
}

// WriteText writes one line per check: status, name, detail, and the fix
// of a failing or warning check.
func (r Report) WriteText(w io.Writer) error {
	for _, c := range r.Checks {
		line := fmt.Sprintf("%-4s  %-22s %s", c.Status, c.Name, c.Detail)
		if c.Fix != "" {
			line += " — fix: " + c.Fix
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}

// WriteJSON writes the report as one JSON object.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Options says where to look. Zero values are the standard places.
type Options struct {
	// NVML is the library to query; nil loads the system's libnvidia-ml.
	NVML nvml.Interface
	// NVMLLibrary names the library in messages (default libnvidia-ml.so.1).
	NVMLLibrary string
	// Simulated names the simulated node, when NVML is one.
	Simulated string
	// Root is prefixed to every host path (default /): a test lays out a
	// node under a directory.
	Root string
	// CDIDirs are the CDI spec directories (default /etc/cdi, /var/run/cdi).
	CDIDirs []string
	// AgentSocket is the agent's API socket (default $MIGPRO_SOCKET, then
	// /run/migpro/agent.sock).
	AgentSocket string
	// PluginSocket and PodResourcesSocket are the kubelet's.
	PluginSocket, PodResourcesSocket string
	// Run runs a program for its version output (default: exec with a
	// 5 s limit); LookPath finds it (default exec.LookPath under Root).
	Run      func(name string, args ...string) (string, error)
	LookPath func(name string) (string, error)
	// Timeout bounds socket connections (default 1 s).
	Timeout time.Duration
}

func (o *Options) defaults() {
	if o.Root == "" {
		o.Root = "/"
	}
	if o.NVMLLibrary == "" {
		o.NVMLLibrary = "libnvidia-ml.so.1"
	}
	if o.CDIDirs == nil {
		o.CDIDirs = []string{"/etc/cdi", "/var/run/cdi"}
	}
	if o.AgentSocket == "" {
		o.AgentSocket = defaults.AgentSocket
		if v := os.Getenv(defaults.EnvSocket); v != "" {
			o.AgentSocket = v
		}
	}
	if o.PluginSocket == "" {
		o.PluginSocket = filepath.Join(defaults.PluginDir, defaults.KubeletSocketName)
	}
	if o.PodResourcesSocket == "" {
		o.PodResourcesSocket = defaults.PodResourcesSocket
	}
	if o.Run == nil {
		o.Run = runVersion
	}
	if o.LookPath == nil {
		o.LookPath = o.lookPath
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Second
	}
}

// host is a host path under Root.
func (o *Options) host(p string) string { return filepath.Join(o.Root, p) }

// Run runs every check.
func Run(o Options) Report {
	o.defaults()
	lib := o.NVML
	if lib == nil {
		lib = nvml.New(nvml.WithLibraryPath(o.NVMLLibrary))
	}
	r := Report{Simulated: o.Simulated}
	r.Checks = append(r.Checks, gpuChecks(lib, o)...)
	r.Checks = append(r.Checks, hostChecks(o)...)
	return r
}
