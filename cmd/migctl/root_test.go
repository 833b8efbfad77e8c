package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// Every command's --help exits 0 and lists its own flags and an example;
// the commands that talk to the agent list --socket.
func TestEveryCommandHasHelp(t *testing.T) {
	agentCmds := map[string]bool{"alloc": true, "free": true, "status": true, "top": true}
	for _, c := range newRootCmd().Commands() {
		name := c.Name()
		if name == "completion" || name == "help" {
			continue
		}
		out, errOut, code := migctl(name, "--help")
		if code != 0 || errOut != "" {
			t.Errorf("%s --help: exit %d, stderr %q", name, code, errOut)
			continue
		}
		for _, want := range []string{"Usage:", "Examples:", c.Short} {
			if !strings.Contains(out, want) {
				t.Errorf("%s --help lacks %q:\n%s", name, want, out)
			}
		}
		if agentCmds[name] != strings.Contains(out, "--socket") {
			t.Errorf("%s --help: lists --socket %v, want %v", name, !agentCmds[name], agentCmds[name])
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if !strings.Contains(out, "--"+f.Name) {
				t.Errorf("%s --help does not list --%s", name, f.Name)
			}
		})
	}
}

// The global flags take their defaults from the environment; a bad value
// there is bad usage naming the variable, and a global a command does not
// use is refused.
func TestGlobalFlagsFromTheEnvironment(t *testing.T) {
	sock := runAgent(t)
	t.Setenv("MIGPRO_SOCKET", sock)
	t.Setenv("MIGPRO_OUTPUT", "json")
	out, errOut, code := migctl("status")
	if code != 0 || !strings.HasPrefix(strings.TrimSpace(out), "{") {
		t.Errorf("status with MIGPRO_OUTPUT=json: exit %d, %q %q; want JSON", code, out, errOut)
	}
	if out, _, code := migctl("status", "--output", "text"); code != 0 || strings.HasPrefix(strings.TrimSpace(out), "{") {
		t.Errorf("--output text does not beat MIGPRO_OUTPUT: exit %d, %q", code, out)
	}
	t.Setenv("MIGPRO_OUTPUT", "")
	t.Setenv("MIGPRO_TIMEOUT", "soon")
	if _, errOut, code := migctl("status"); code != 2 || !strings.Contains(errOut, "MIGPRO_TIMEOUT") {
		t.Errorf("bad MIGPRO_TIMEOUT: exit %d, %q; want 2 naming it", code, errOut)
	}
	t.Setenv("MIGPRO_TIMEOUT", "-1s")
	if _, errOut, code := migctl("status"); code != 2 || strings.Contains(errOut, "is it running") {
		t.Errorf("negative MIGPRO_TIMEOUT: exit %d, %q; want 2", code, errOut)
	}
	t.Setenv("MIGPRO_TIMEOUT", "")
	if _, errOut, code := migctl("free", "--output", "json", "x"); code != 2 || !strings.Contains(errOut, "unknown flag: --output") {
		t.Errorf("free --output json: exit %d, %q; want 2", code, errOut)
	}
	if _, _, code := migctl("no-such-command"); code != 2 {
		t.Errorf("unknown command: exit %d, want 2", code)
	}
	if _, _, code := migctl(); code != 2 {
		t.Errorf("no command: exit %d, want 2", code)
	}
}

// migctl completion writes a script for each shell that knows the commands;
// bash parses it.
func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		out, errOut, code := migctl("completion", shell)
		if code != 0 || !strings.Contains(out, "migctl") {
			t.Errorf("completion %s: exit %d, %q", shell, code, errOut)
			continue
		}
		if shell == "bash" {
			path := filepath.Join(t.TempDir(), "migctl.bash")
			if err := writeFile(path, out); err != nil {
				t.Fatal(err)
			}
			if b, err := exec.Command("bash", "-n", path).CombinedOutput(); err != nil {
				t.Errorf("bash -n on the completion: %v\n%s", err, b)
			}
		}
	}
	// The commands' own completion: what cobra offers after "migctl re".
	out, _, code := migctl("__complete", "st")
	if code != 0 || !strings.Contains(out, "status") {
		t.Errorf("__complete st: exit %d, %q; want status offered", code, out)
	}
	out, _, _ = migctl("__complete", "plan", "--pol")
	if !strings.Contains(out, "--policy") {
		t.Errorf("__complete plan --pol: %q; want --policy", out)
	}
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o644) }

// Completion offers GPU models, the profiles a simulated node or the agent
// offers, and the fixed choices of a flag.
func TestCompletionOfModelsAndProfiles(t *testing.T) {
	sock := runAgent(t)
	for _, tc := range []struct {
		args []string
		want []string
		not  []string
	}{
		{[]string{"plan", "--simulate", ""}, []string{"a100-40gb", "h100-80gb"}, nil},
		{[]string{"plan", "--simulate", "a100-40gb:2,h1"}, []string{"a100-40gb:2,h100-80gb"}, nil},
		{[]string{"plan", "--simulate", "a100-40gb", ""}, []string{"1g.5gb", "3g.20gb", "7g.40gb"}, []string{"1g.10gb+gfx", "3g.40gb"}},
		{[]string{"plan", "--policy", ""}, []string{"first-fit"}, nil},
		{[]string{"estimate", "--gpu", ""}, []string{"a30-24gb", "h100-80gb"}, nil},
		{[]string{"predict", "--gpu", ""}, []string{"h100-80gb"}, nil},
		{[]string{"status", "--output", ""}, []string{"text", "json"}, nil},
		{[]string{"alloc", "--socket", sock, ""}, []string{"1g.5gb", "2g.10gb", "7g.40gb"}, nil},
	} {
		out, errOut, code := migctl(append([]string{"__complete"}, tc.args...)...)
		lines := strings.Split(out, "\n")
		if code != 0 {
			t.Errorf("__complete %q: exit %d: %s", tc.args, code, errOut)
			continue
		}
		for _, w := range tc.want {
			if !slices.Contains(lines, w) {
				t.Errorf("__complete %q offers %q, want %s among them", tc.args, lines, w)
			}
		}
		for _, n := range tc.not {
			if slices.Contains(lines, n) {
				t.Errorf("__complete %q offers %s", tc.args, n)
			}
		}
	}
}

// --output is listed only by the commands that print JSON, and each of them
// honours MIGPRO_OUTPUT; the others refuse the flag.
func TestOutputOnlyWhereSupported(t *testing.T) {
	jsonCmds := map[string][]string{
		"alloc": nil, "status": nil, "top": nil, // need the agent: help only
		"plan":     {"plan", "--simulate", "a100-40gb", "1g.5gb"},
		"predict":  {"predict", "--capacity", "10Gi", traceDir + "/flat.csv"},
		"estimate": {"estimate", "--gpu", "a100-40gb", "--memory", "7Gi"},
		"version":  {"version"},
		"doctor":   nil, // inspects this host: help only
	}
	for _, c := range newRootCmd().Commands() {
		name := c.Name()
		// record's --output is the trace file it writes, not a format.
		if name == "completion" || name == "help" || name == "record" {
			continue
		}
		help, _, _ := migctl(name, "--help")
		run, supported := jsonCmds[name]
		if strings.Contains(help, "--output") != supported {
			t.Errorf("%s --help lists --output: %v, want %v", name, !supported, supported)
		}
		if !supported {
			if _, errOut, code := migctl(name, "--output", "json"); code != 2 || !strings.Contains(errOut, "--output") {
				t.Errorf("%s --output json: exit %d, %q; want 2 naming --output", name, code, errOut)
			}
			continue
		}
		if run == nil {
			continue
		}
		t.Setenv("MIGPRO_OUTPUT", "json")
		out, errOut, code := migctl(run...)
		t.Setenv("MIGPRO_OUTPUT", "")
		if code != 0 || !json.Valid([]byte(out)) {
			t.Errorf("MIGPRO_OUTPUT=json migctl %q: exit %d, %q %q; want JSON", run, code, out, errOut)
		}
	}
}

// The workload replay's old names under migctl name the command that
// replaced it, with the arguments given, in one line and exit 2.
func TestReplayMovedToLab(t *testing.T) {
	for _, name := range []string{"replay", "simulate"} {
		out, errOut, code := migctl(name, "--csv", "pods.csv", "--jobs", "600")
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 ||
			!strings.Contains(errOut, "migpro-lab replay --csv pods.csv --jobs 600") {
			t.Errorf("migctl %s: exit %d, stdout %q, stderr %q; want one line naming migpro-lab replay, exit 2", name, code, out, errOut)
		}
	}
}
