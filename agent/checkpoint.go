package agent

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
	// Lease names a local holding (the alloc's answer carries it), so a
	// free by that holder stays idempotent across a restart.
	Lease string `json:"lease,omitempty"`
}

// checkpointStore writes the checkpoint atomically and durably: a crash
// leaves either the old file or the new one, never a torn one.
type checkpointStore struct {
	path string
	mu   sync.Mutex

	leaseMu sync.Mutex
	leases  map[string]string // MIG UUID -> lease of its local holder
}

// newLease names one local holding: 128 random bits, hex.
func newLease() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("lease: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

func (c *checkpointStore) lease(uuid string) string {
	c.leaseMu.Lock()
	defer c.leaseMu.Unlock()
	return c.leases[uuid]
}

// setLease records uuid's lease; "" forgets it.
func (c *checkpointStore) setLease(uuid, lease string) {
	c.leaseMu.Lock()
	defer c.leaseMu.Unlock()
	if c.leases == nil {
		c.leases = map[string]string{}
	}
	if lease == "" {
		delete(c.leases, uuid)
		return
	}
	c.leases[uuid] = lease
}

func newCheckpointStore(dir string) (*checkpointStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create state directory %s: %w", dir, err)
	}
	// MkdirAll leaves an existing directory as it is (a hostPath or the
	// simulated GPUs' root may have made it 0755): the state is root's only.
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, "checkpoint.json")
	atomicfile.RemoveStaleTemps(path)
	return &checkpointStore{path: path}, nil
}

// errCorruptCheckpoint marks a checkpoint file that is not a checkpoint at
// all (not JSON, `null`, no version): recover sets it aside and rebuilds from
// NVML and the kubelet. A checkpoint of another version is not corrupt (a
// newer agent wrote it) and stays a refusal.
var errCorruptCheckpoint = errors.New("corrupt checkpoint")

// Load reads the checkpoint; a missing file is an empty checkpoint.
func (c *checkpointStore) Load() (Checkpoint, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	empty := Checkpoint{Version: checkpointVersion, Holders: map[string]Holder{}}
	b, err := os.ReadFile(c.path)
	if errors.Is(err, fs.ErrNotExist) {
		return empty, nil
	}
	if err != nil {
		return empty, fmt.Errorf("read checkpoint: %w", err)
	}
	// Decode into a pointer: `null` leaves it nil instead of silently
	// meaning "nobody holds anything".
	var p *Checkpoint
	if err := json.Unmarshal(b, &p); err != nil {
		return empty, fmt.Errorf("read checkpoint %s: %w: %w", c.path, errCorruptCheckpoint, err)
	}
	if p == nil {
		return empty, fmt.Errorf("read checkpoint %s: %w: the file is JSON null", c.path, errCorruptCheckpoint)
	}
	cp := *p
	if cp.Version == 0 {
		return empty, fmt.Errorf("read checkpoint %s: %w: no version", c.path, errCorruptCheckpoint)
	}
	if cp.Version != checkpointVersion {
		return cp, fmt.Errorf("read checkpoint %s: version %d, this agent reads %d", c.path, cp.Version, checkpointVersion)
	}
	if cp.Holders == nil {
		// {"version":1} or "holders":null is not "nobody holds anything":
		// a checkpoint always writes its holders, {} when there are none.
		return empty, fmt.Errorf("read checkpoint %s: %w: no holders", c.path, errCorruptCheckpoint)
	}
	for uuid, h := range cp.Holders {
		if err := validHolder(uuid, h); err != nil {
			return empty, fmt.Errorf("read checkpoint %s: %w: %w", c.path, errCorruptCheckpoint, err)
		}
	}
	return cp, nil
}

// SetAside renames the checkpoint file out of the way (keeping it for the
// operator to inspect) and returns its new name.
func (c *checkpointStore) SetAside() (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	aside := fmt.Sprintf("%s.corrupt-%s", c.path, time.Now().UTC().Format("20060102T150405.000000000Z"))
	if err := os.Rename(c.path, aside); err != nil {
		return "", fmt.Errorf("set corrupt checkpoint aside: %w", err)
	}
	return aside, nil
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

// validHolder checks what the checkpoint says of one holder as the local
// API checks an owner: it is printed by migctl status and in logs.
func validHolder(uuid string, h Holder) error {
	if !strings.HasPrefix(uuid, "MIG-") || len(uuid) > 128 || strings.ContainsFunc(uuid, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return fmt.Errorf("holder key %q is not a MIG UUID", uuid)
	}
	if len(h.Owner) > 2*maxOwner {
		return fmt.Errorf("instance %s: owner is %d bytes", uuid, len(h.Owner))
	}
	if err := validOwner(strings.TrimPrefix(h.Owner, ownerLocal+":")); err != nil {
		return fmt.Errorf("instance %s: %w", uuid, err)
	}
	return nil
}
