package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// lowerCamel is the one key style of every --output json: "gpu",
// "cdiName", "peakBytes". Map keys that are data (profiles such as
// "1g.5gb", policy names, UUIDs) are values, not field names; they are
// listed by the caller as allowed.
var lowerCamel = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)

// badKeys walks a decoded JSON value and returns the keys that are not
// lowerCamel, as paths; data keys under a map are skipped when isData says so.
func badKeys(v any, path string, isData func(path, key string) bool, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if !isData(path, k) && !lowerCamel.MatchString(k) {
				out[path+"."+k] = true
			}
			badKeys(e, path+"."+k, isData, out)
		}
	case []any:
		for _, e := range x {
			badKeys(e, path+"[]", isData, out)
		}
	}
}

// decodeAll decodes every JSON document in b (one or several, e.g. top
// --watch prints one per line).
func decodeAll(t *testing.T, b []byte) []any {
	t.Helper()
	var docs []any
	dec := json.NewDecoder(bufio.NewReader(bytes.NewReader(b)))
	for dec.More() {
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("decode: %v\n%s", err, b)
		}
		docs = append(docs, v)
	}
	if len(docs) == 0 {
		t.Fatalf("no JSON in %q", b)
	}
	return docs
}

// oneStyle reports whether b is JSON documents indented by two spaces, each
// ending in a newline: the one style of every --output json.
func oneStyle(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	var want bytes.Buffer
	for dec.More() {
		var raw json.RawMessage
		if dec.Decode(&raw) != nil || json.Indent(&want, raw, "", "  ") != nil {
			return false
		}
		want.WriteByte('\n')
	}
	return bytes.Equal(b, want.Bytes())
}

// Every command with --output json, run through migctl's own entry point,
// uses lowerCamel keys only, in one style.
func TestJSONKeysAreLowerCamel(t *testing.T) {
	sock := runAgent(t)
	topSock := topAgent(t)
	cases := [][]string{
		{"alloc", "--socket", sock, "--output", "json", "1g.5gb"},
		{"status", "--socket", sock, "--output", "json"},
		{"top", "--socket", topSock, "--output", "json"},
		{"estimate", "--gpu", "h100-80gb", "--memory", "7Gi", "--output", "json"},
		{"version", "--output", "json"},
		{"top", "--socket", topSock, "-o", "json", "--watch", "1ms", "--count", "2"},
		{"plan", "--simulate", "a100-40gb:2", "--output", "json", "1g.5gb", "3g.20gb"},
		{"predict", "--capacity", "10737418240", "--gpu", "h100-80gb", "--output", "json", traceDir},
	}
	// Keys that are data: profile names, policy names, GPU models.
	dataKey := regexp.MustCompile(`^([0-9]+g\.[0-9]+gb.*|[a-z0-9]+-[0-9]+gb.*|migpro.*|first-fit|reachability|static:.*|A-.*)$`)
	isData := func(_, k string) bool { return dataKey.MatchString(k) }
	for _, args := range cases {
		var out, errb bytes.Buffer
		if code := runMain(args, &out, &errb); code != 0 {
			t.Errorf("migctl %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
			continue
		}
		if !oneStyle(out.Bytes()) {
			t.Errorf("migctl %s: JSON not in the one style (indented by two spaces):\n%s", strings.Join(args, " "), out.String())
		}
		bad := map[string]bool{}
		for _, d := range decodeAll(t, out.Bytes()) {
			badKeys(d, args[0], isData, bad)
		}
		if len(bad) > 0 {
			keys := make([]string, 0, len(bad))
			for k := range bad {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			t.Errorf("migctl %s: keys not lowerCamel: %v", args[0], keys)
		}
	}
}
