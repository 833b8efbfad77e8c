package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/migpro/migpro/internal/atomicfile"
)

// checkpointVersion changes when the file's meaning changes incompatibly.
const checkpointVersion = 1

// Checkpoint is what the agent must remember across a restart that neither
// NVML nor the kubelet can tell it: who holds each instance.
type Checkpoint struct {
	Version   int               `json:"version"`
	WrittenAt time.Time         `json:"writtenAt"`
	Holders   map[string]Holder `json:"holders"` // by MIG UUID
}

// Holder is an instance's owner and when it was taken.
type Holder struct {
	Owner   string    `json:"owner"`
	Profile string    `json:"profile"`
	Since   time.Time `json:"since"`
}

// checkpointStore writes the checkpoint atomically and durably: a crash
// leaves either the old file or the new one, never a torn one.
type checkpointStore struct {
	path string
	mu   sync.Mutex
}

func newCheckpointStore(dir string) (*checkpointStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create state directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, "checkpoint.json")
	atomicfile.RemoveStaleTemps(path)
	return &checkpointStore{path: path}, nil
}

// Load reads the checkpoint; a missing file is an empty checkpoint.
func (c *checkpointStore) Load() (Checkpoint, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cp := Checkpoint{Version: checkpointVersion, Holders: map[string]Holder{}}
	b, err := os.ReadFile(c.path)
	if errors.Is(err, fs.ErrNotExist) {
		return cp, nil
	}
	if err != nil {
		return cp, fmt.Errorf("read checkpoint: %w", err)
	}
	if err := json.Unmarshal(b, &cp); err != nil {
		return cp, fmt.Errorf("read checkpoint %s: %w (move it aside to start afresh; running instances are rediscovered from NVML and the kubelet)", c.path, err)
	}
	if cp.Version != checkpointVersion {
		return cp, fmt.Errorf("read checkpoint %s: version %d, this agent reads %d", c.path, cp.Version, checkpointVersion)
	}
	if cp.Holders == nil {
		cp.Holders = map[string]Holder{}
	}
	return cp, nil
}

// Save replaces the checkpoint atomically and durably.
func (c *checkpointStore) Save(cp Checkpoint) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cp.Version = checkpointVersion
	cp.WrittenAt = time.Now().UTC()
	b, err := json.MarshalIndent(cp, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(c.path, b, 0o600, atomicfile.Options{Durable: true}); err != nil {
		return fmt.Errorf("write checkpoint: %w", err)
	}
	return nil
}
