package estimator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestHistorySurvivesReopenAndOnlyGrows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.json")
	h, err := OpenHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := h.Peak("ns/app/c"); ok {
		t.Fatal("empty store has a peak")
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, peak := range []uint64{5 << 30, 9 << 30, 7 << 30} {
		if err := h.Record("ns/app/c", peak, now); err != nil {
			t.Fatal(err)
		}
	}
	h2, err := OpenHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := h2.Peak("ns/app/c"); !ok || p != 9<<30 {
		t.Errorf("reopened peak %d %v, want 9 GiB", p, ok)
	}
	if e := h2.data.Peaks["ns/app/c"]; e.Runs != 3 || !e.Updated.Equal(now) {
		t.Errorf("entry %+v", e)
	}
	// No temporary files are left next to the store.
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d files, want only the store", len(entries))
	}
}

func TestHistoryRejectsCorruptFile(t *testing.T) {
	dir := t.TempDir()
	for content, want := range map[string]string{
		"{not json":                  "history",
		`{"version":9,"peaks":{}}`:   "version 9",
		`{"version":1,"peaks":null}`: "",
	} {
		path := filepath.Join(dir, "h.json")
		os.WriteFile(path, []byte(content), 0o644)
		_, err := OpenHistory(path)
		if want == "" {
			if err != nil {
				t.Errorf("%q: %v", content, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", content, err, want)
		}
	}
	h, _ := OpenHistory(filepath.Join(dir, "x.json"))
	if err := h.Record("", 1, time.Now()); err == nil {
		t.Error("empty key accepted")
	}
}

func TestHistoryWriteFailureKeepsOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "h.json")
	h, _ := OpenHistory(path)
	if err := h.Record("a", 1<<30, time.Now()); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o700)
	if os.Geteuid() == 0 {
		t.Log("running as root: directory permissions do not stop writes, checking content only")
	} else if err := h.Record("a", 2<<30, time.Now()); err == nil {
		t.Error("write into a read-only directory succeeded")
	}
	after, _ := os.ReadFile(path)
	if os.Geteuid() != 0 && string(after) != string(before) {
		t.Error("failed write changed the store")
	}
}

func TestHistoryBoundsKeys(t *testing.T) {
	h, _ := OpenHistory(filepath.Join(t.TempDir(), "h.json"))
	base := time.Now()
	for i := range maxHistoryKeys {
		h.data.Peaks[string(rune('a'+i%26))+time.Duration(i).String()] = HistoryEntry{PeakBytes: 1, Updated: base.Add(time.Duration(i))}
	}
	if err := h.Record("newest", 5, base.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if len(h.data.Peaks) != maxHistoryKeys {
		t.Errorf("%d keys, want %d", len(h.data.Peaks), maxHistoryKeys)
	}
	if _, ok := h.Peak("newest"); !ok {
		t.Error("newest key evicted")
	}
}
