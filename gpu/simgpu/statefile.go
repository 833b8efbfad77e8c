package simgpu

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/migpro/migpro/internal/atomicfile"
)

// stateStore is where a node with WithStateFile saves its driver state.
type stateStore struct {
	path string
}

// attachStateFile makes path the driver's durable state: it takes the
// writer's lock, clears temp files a crash mid-save left, then loads the
// saved state into the fresh driver, or saves the fresh one when there is
// none yet (so readers and a second New see this node's spec at once).
func (d *driver) attachStateFile(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("state file %s: %w", path, err)
	}
	if err := lockStateFile(abs); err != nil {
		return err
	}
	atomicfile.RemoveStaleTemps(abs) // only the lock holder saves, so none is in flight
	data, err := os.ReadFile(abs)
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case errors.Is(err, os.ErrNotExist):
		// No saved instances, so any under the root are a stale run's.
		for _, g := range d.gpus {
			d.files.pruneStale(g)
		}
		d.store = &stateStore{path: abs}
		if err := d.persistLocked(); err != nil {
			return fmt.Errorf("save initial state: %w", err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("read simulated driver state: %w", err)
	}
	st, err := decodeState(data)
	if err != nil {
		return fmt.Errorf("simulated driver state %s: %w", abs, err)
	}
	if st.Spec != d.spec() || st.Seed != d.seed {
		return fmt.Errorf("simulated driver state %s is for node %q with seed %d, but this node is %q with seed %d: use the same --simulate spec and seed, or remove the file to start empty",
			abs, st.Spec, st.Seed, d.spec(), d.seed)
	}
	// Check on a scratch driver first: a refused file must leave no
	// capability files behind under the root.
	if _, err := restoredDriver(st); err != nil {
		return fmt.Errorf("simulated driver state %s is corrupt: %w", abs, err)
	}
	if err := d.restoreLocked(st); err != nil {
		return fmt.Errorf("simulated driver state %s is corrupt: %w", abs, err)
	}
	for _, g := range d.gpus {
		d.files.pruneStale(g)
	}
	d.store = &stateStore{path: abs}
	return nil
}

// persistLocked saves the driver state if the node has a state file. It
// runs under the state lock so saves land in the order changes were made;
// the file is a few kilobytes, so the pause it gives readers is short.
func (d *driver) persistLocked() error {
	if d.store == nil {
		return nil
	}
	return d.store.write(d.snapshotLocked())
}

// write replaces the file atomically: a reader or a crash sees the old
// state or the new one, never a mix. Durable, so a saved change survives
// power loss as well as a killed process.
func (s *stateStore) write(st State) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode simulated driver state: %w", err)
	}
	if err := atomicfile.WriteFile(s.path, append(data, '\n'), 0o600, atomicfile.Options{Durable: true}); err != nil {
		return fmt.Errorf("save simulated driver state: %w", err)
	}
	return nil
}

// The writer's lock is a POSIX record lock on "<state file>.lock". Such
// locks belong to the process, which is the rule wanted: one process (the
// agent) writes, and several nodes inside it - a test reopening the file
// after abandoning a node, as a restarted agent would - do not lock each
// other out. The kernel drops the lock when the process dies, kill -9
// included. Closing any descriptor of the lock file would drop it early, so
// each lock file is opened once per process and kept open.
var (
	heldMu    sync.Mutex
	heldLocks = map[string]*os.File{}
)

func lockStateFile(path string) error {
	heldMu.Lock()
	defer heldMu.Unlock()
	if _, ok := heldLocks[path]; ok {
		return nil
	}
	lockPath := path + ".lock"
	fh, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("lock simulated driver state: %w", err)
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	if err := unix.FcntlFlock(fh.Fd(), unix.F_SETLK, &lk); err != nil {
		holder := "another process"
		probe := unix.Flock_t{Type: unix.F_WRLCK}
		if unix.FcntlFlock(fh.Fd(), unix.F_GETLK, &probe) == nil && probe.Type != unix.F_UNLCK {
			holder = fmt.Sprintf("process %d", probe.Pid)
		}
		_ = fh.Close()
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
			return fmt.Errorf("simulated driver state %s is in use by %s: only the process running the simulated node may open it (others use sim.ReadStateFile)", path, holder)
		}
		return fmt.Errorf("lock simulated driver state %s: %w", lockPath, err)
	}
	heldLocks[path] = fh
	return nil
}
