package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"
)

func hostChecks(o Options) []Check {
	var out []Check
	out = append(out, cdiDirChecks(o)...)
	out = append(out, runtimeCheck(o))
	out = append(out, hookCheck(o))
	out = append(out,
		socketCheck(o, "kubelet plugins", o.PluginSocket, "the kubelet's device-plugin registration socket",
			"start the kubelet (not needed on a node that runs containers with podman only)"),
		socketCheck(o, "kubelet podresources", o.PodResourcesSocket, "the kubelet's PodResources socket",
			"start the kubelet; without it the agent cannot tell which instances pods use"),
		socketCheck(o, "agent", o.AgentSocket, "the migpro agent's socket",
			"install and start migpro-agent (docs/install.md); migctl record needs no agent"))
	return out
}

func cdiDirChecks(o Options) []Check {
	var out []Check
	for _, d := range o.CDIDirs {
		name := "cdi dir " + d
		fi, err := os.Stat(o.host(d))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			out = append(out, Check{Name: name, Status: StatusWarn, Detail: "does not exist",
				Fix: "the agent creates " + d + " when it writes a spec there (--cdi-dir); create it by hand for other tools"})
		case err != nil:
			out = append(out, Check{Name: name, Status: StatusFail, Detail: err.Error(), Fix: "check the directory's permissions"})
		case !fi.IsDir():
			out = append(out, Check{Name: name, Status: StatusFail, Detail: "is not a directory", Fix: "remove it so the runtime's spec directory can be made"})
		default:
			n, _ := filepath.Glob(filepath.Join(o.host(d), "*.json"))
			y, _ := filepath.Glob(filepath.Join(o.host(d), "*.yaml"))
			out = append(out, Check{Name: name, Status: StatusOK, Detail: fmt.Sprintf("exists, %d spec file(s)", len(n)+len(y))})
		}
	}
	return out
}

// runtimeCheck reports each runtime found and whether it applies CDI specs:
// containerd 2.x always, 1.7 with enable_cdi; CRI-O from 1.23; podman from 4.1.
// enableCDIRE finds containerd 1.7's enable_cdi setting in its config.
var enableCDIRE = regexp.MustCompile(`(?m)^\s*enable_cdi\s*=\s*(true|false)`)

func runtimeCheck(o Options) Check {
	var found, bad []string
	var fixes []string
	if p, err := o.LookPath("containerd"); err == nil {
		v := version(o, p, "--version")
		conf, _ := os.ReadFile(o.host("/etc/containerd/config.toml"))
		enabled := enableCDIRE.FindSubmatch(conf)
		switch {
		case enabled != nil && string(enabled[1]) == "false":
			bad = append(bad, "containerd "+v+" (enable_cdi = false)")
			fixes = append(fixes, "set enable_cdi = true in /etc/containerd/config.toml and restart containerd")
		case major(v) >= 2 || enabled != nil:
			found = append(found, "containerd "+v)
		default:
			bad = append(bad, "containerd "+v+" (CDI off before 2.0 unless enable_cdi = true)")
			fixes = append(fixes, "set enable_cdi = true (and cdi_spec_dirs) in the CRI plugin section of /etc/containerd/config.toml, or upgrade to containerd 2")
		}
	}
	// Runtimes that apply CDI specs from a minimum version on.
	for _, rt := range []struct {
		bin, name  string
		maj, minor int
	}{{"crio", "CRI-O", 1, 23}, {"podman", "podman", 4, 1}} {
		p, err := o.LookPath(rt.bin)
		if err != nil {
			continue
		}
		v := version(o, p, "--version")
		if atLeast(v, rt.maj, rt.minor) {
			found = append(found, rt.name+" "+v)
			continue
		}
		bad = append(bad, fmt.Sprintf("%s %s (CDI from %d.%d)", rt.name, v, rt.maj, rt.minor))
		fixes = append(fixes, fmt.Sprintf("upgrade %s to %d.%d or later", rt.name, rt.maj, rt.minor))
	}
	detail := "apply CDI specs: " + strings.Join(found, ", ")
	if len(bad) > 0 {
		detail += "; do not: " + strings.Join(bad, ", ")
	}
	switch {
	case len(found) == 0 && len(bad) == 0:
		return Check{Name: "runtimes", Status: StatusFail, Detail: "no containerd, CRI-O or podman found",
			Fix: "install containerd 2 (or 1.7 with enable_cdi), CRI-O 1.23+ or podman 4.1+"}
	case len(found) == 0:
		return Check{Name: "runtimes", Status: StatusFail, Detail: detail, Fix: strings.Join(fixes, "; ")}
	case len(bad) > 0:
		return Check{Name: "runtimes", Status: StatusWarn, Detail: detail, Fix: strings.Join(fixes, "; ")}
	}
	return Check{Name: "runtimes", Status: StatusOK, Detail: detail}
}

var versionRE = regexp.MustCompile(`v?(\d+)\.(\d+)(\.\d+)?`)

func version(o Options, path string, args ...string) string {
	out, err := o.Run(path, args...)
	if err != nil {
		return "(version unknown)"
	}
	if m := versionRE.FindString(out); m != "" {
		return strings.TrimPrefix(m, "v")
	}
	return "(version unknown)"
}

func major(v string) int {
	m := versionRE.FindStringSubmatch(v)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func atLeast(v string, maj, mnr int) bool {
	m := versionRE.FindStringSubmatch(v)
	if m == nil {
		return false
	}
	a, _ := strconv.Atoi(m[1])
	b, _ := strconv.Atoi(m[2])
	return a > maj || a == maj && b >= mnr
}

func runVersion(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).Output()
	return string(out), err
}

// lookPath finds a program in the standard directories under Root, or in
// PATH when Root is /.
func (o *Options) lookPath(name string) (string, error) {
	if o.Root == "/" {
		return exec.LookPath(name)
	}
	for _, d := range []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"} {
		p := o.host(filepath.Join(d, name))
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// hookCheck reads every spec in the CDI directories and checks that each
// hook they name (nvidia-cdi-hook, migpro-hook) is an executable file: a
// runtime fails every container of a spec whose hook is missing.
func hookCheck(o Options) Check {
	missing := map[string][]string{}
	var present []string
	var unreadable []string
	seen := map[string]bool{}
	specs := 0
	for _, d := range o.CDIDirs {
		files, _ := filepath.Glob(filepath.Join(o.host(d), "*"))
		for _, f := range files {
			if ext := filepath.Ext(f); ext != ".json" && ext != ".yaml" {
				continue
			}
			s, err := cdiapi.ReadSpec(f, 0)
			if err != nil {
				unreadable = append(unreadable, filepath.Base(f))
				continue
			}
			specs++
			var paths []string
			for _, h := range s.ContainerEdits.Hooks {
				paths = append(paths, h.Path)
			}
			for _, dev := range s.Devices {
				for _, h := range dev.ContainerEdits.Hooks {
					paths = append(paths, h.Path)
				}
			}
			for _, p := range paths {
				if fi, err := os.Stat(o.host(p)); err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
					missing[p] = append(missing[p], filepath.Base(f))
				} else if !seen[p] {
					present = append(present, p)
				}
				seen[p] = true
			}
		}
	}
	sort.Strings(present)
	if len(missing) > 0 {
		var parts []string
		for p, in := range missing {
			parts = append(parts, fmt.Sprintf("%s (named in %d spec(s), e.g. %s)", p, len(in), in[0]))
		}
		sort.Strings(parts)
		return Check{Name: "cdi hooks", Status: StatusFail, Detail: "missing or not executable: " + strings.Join(parts, ", "),
			Fix: "install the NVIDIA Container Toolkit's nvidia-cdi-hook (or migpro-hook) at that path, or point the agent at it (--nvidia-cdi-hook-path, --hook)"}
	}
	detail := fmt.Sprintf("%d spec(s) read", specs)
	if len(present) > 0 {
		detail += "; hooks present: " + strings.Join(present, ", ")
	}
	if len(unreadable) > 0 {
		sort.Strings(unreadable)
		return Check{Name: "cdi hooks", Status: StatusWarn, Detail: detail + "; unreadable specs: " + strings.Join(unreadable, ", "),
			Fix: "a runtime skips or refuses specs it cannot read; fix or remove them"}
	}
	return Check{Name: "cdi hooks", Status: StatusOK, Detail: detail}
}

// socketCheck connects to a unix socket and closes it at once.
func socketCheck(o Options, name, path, what, fix string) Check {
	p := o.host(path)
	if _, err := os.Stat(p); err != nil {
		return Check{Name: name, Status: StatusWarn, Detail: fmt.Sprintf("%s %s is absent", what, path), Fix: fix}
	}
	c, err := net.DialTimeout("unix", p, o.Timeout)
	if err != nil {
		return Check{Name: name, Status: StatusWarn, Detail: fmt.Sprintf("%s %s does not answer: %v", what, path, errors.Unwrap(err)), Fix: fix}
	}
	_ = c.Close()
	return Check{Name: name, Status: StatusOK, Detail: fmt.Sprintf("%s %s answers", what, path)}
}
