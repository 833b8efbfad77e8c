package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestHelpExamplesRun runs every example of every command's --help, as a
// user pastes it, from the repository root against a live agent. Examples
// that stand for a value the user supplies (…, IMAGE, $(…)) or that run
// until interrupted are left out, and the test says which; so are those of
// doctor and record, which inspect this host and run the user's programs.
func TestHelpExamplesRun(t *testing.T) {
	sock := runAgent(t)
	t.Setenv("MIGPRO_SOCKET", sock)
	t.Chdir("../..")
	example := regexp.MustCompile(`(?m)^  (?:MIGPRO_SOCKET=\S+ )?migctl (.*)$`)
	ran := 0
	for _, c := range newRootCmd().Commands() {
		out, _, code := migctl(c.Name(), "--help")
		if code != 0 {
			t.Fatalf("%s --help: exit %d", c.Name(), code)
		}
		_, examples, _ := strings.Cut(out, "Examples:")
		examples, _, _ = strings.Cut(examples, "\n\n")
		for _, m := range example.FindAllStringSubmatch(examples, -1) {
			line := m[1]
			if c.Name() == "doctor" || c.Name() == "record" || strings.ContainsAny(line, "…$") || strings.Contains(line, "IMAGE") ||
				(strings.Contains(line, "--watch") && !strings.Contains(line, "--count")) {
				t.Logf("not run: migctl %s", line)
				continue
			}
			args := strings.Fields(line)
			if _, errOut, code := migctl(args...); code != 0 {
				t.Errorf("the example `migctl %s` of %s --help: exit %d: %s", line, c.Name(), code, errOut)
			}
			ran++
		}
	}
	if ran < 10 {
		t.Errorf("ran %d examples; the pattern no longer finds them", ran)
	}
}
