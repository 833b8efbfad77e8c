package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// migpro-lab's commands: demo and run have no --output; replay and version
// print JSON with it or with MIGPRO_OUTPUT=json.
func TestLabOutputFlags(t *testing.T) {
	for _, name := range []string{"demo", "run"} {
		var out, errb bytes.Buffer
		if code := runMain([]string{name, "--output", "json"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "unknown flag: --output") {
			t.Errorf("%s --output json: exit %d, %q; want 2", name, code, errb.String())
		}
	}
	t.Setenv("MIGPRO_OUTPUT", "json")
	for _, args := range [][]string{{"version"}, {"replay", "--mix", "llm", "--jobs", "5", "--policies", "migpro"}} {
		var out, errb bytes.Buffer
		if code := runMain(args, &out, &errb); code != 0 || !json.Valid(out.Bytes()) {
			t.Errorf("MIGPRO_OUTPUT=json migpro-lab %q: exit %d, %q %q; want JSON", args, code, out.String(), errb.String())
		}
	}
}

// Every command's --help exits 0 with its examples.
func TestLabHelp(t *testing.T) {
	for _, c := range newRootCmd().Commands() {
		var out, errb bytes.Buffer
		if code := runMain([]string{c.Name(), "--help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "Examples:") {
			t.Errorf("%s --help: exit %d, %q", c.Name(), code, out.String())
		}
	}
}
