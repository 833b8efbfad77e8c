package estimator

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/migpro/migpro/internal/atomicfile"
)

// History remembers the largest memory peak seen per workload key (for
// example "namespace/deployment/container") in a small JSON file. The file
// is rewritten atomically on each change, so a crash leaves either the old
// or the new content and an agent restart reloads it.
type History struct {
	path string
	mu   sync.Mutex
	data historyFile
}

type historyFile struct {
	Version int                     `json:"version"`
	Peaks   map[string]HistoryEntry `json:"peaks"`
}

// HistoryEntry is one workload's record.
type HistoryEntry struct {
	PeakBytes uint64    `json:"peakBytes"`
	Runs      int       `json:"runs"`
	Updated   time.Time `json:"updated"`
}

const historyVersion = 1

// maxHistoryKeys bounds the file: keys come from pod metadata, and a churn
// of uniquely named workloads must not grow it without limit. The oldest
// entries are dropped first.
const maxHistoryKeys = 10000

// OpenHistory loads the store at path; a missing file is an empty store. A
// file that does not parse is an error rather than a silent reset, so that
// a bad write by hand is noticed instead of losing every peak.
func OpenHistory(path string) (*History, error) {
	h := &History{path: path, data: historyFile{Version: historyVersion, Peaks: map[string]HistoryEntry{}}}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return h, nil
	}
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	var f historyFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("history %s: %w", path, err)
	}
	if f.Version != historyVersion {
		return nil, fmt.Errorf("history %s: version %d, this build reads %d", path, f.Version, historyVersion)
	}
	if f.Peaks != nil {
		h.data.Peaks = f.Peaks
	}
	return h, nil
}

// Peak returns the largest peak recorded for key.
func (h *History) Peak(key string) (uint64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.data.Peaks[key]
	return e.PeakBytes, ok
}

// Record notes that a container of workload key ended with this peak. It is
// called when the container ends; the stored peak only grows. Every call
// counts a run, so every call rewrites the file.
func (h *History) Record(key string, peak uint64, now time.Time) error {
	if key == "" {
		return errors.New("history: empty workload key")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.data.Peaks[key]
	e.Runs++
	e.Updated = now.UTC()
	e.PeakBytes = max(e.PeakBytes, peak)
	h.data.Peaks[key] = e
	h.evict()
	return h.save()
}

func (h *History) evict() {
	if len(h.data.Peaks) <= maxHistoryKeys {
		return
	}
	keys := make([]string, 0, len(h.data.Peaks))
	for k := range h.data.Peaks {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return h.data.Peaks[keys[i]].Updated.Before(h.data.Peaks[keys[j]].Updated)
	})
	for _, k := range keys[:len(keys)-maxHistoryKeys] {
		delete(h.data.Peaks, k)
	}
}

// save replaces the store atomically and durably.
func (h *History) save() error {
	b, err := json.MarshalIndent(h.data, "", "  ")
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if err := atomicfile.WriteFile(h.path, append(b, '\n'), 0o600, atomicfile.Options{Durable: true}); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	return nil
}
