package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/migpro/migpro/client"
)

// fullDisk mounts a small tmpfs at dir and returns a function that fills it
// to the last byte, and one that empties it again.
func fullDisk(t *testing.T, dir string) (fill, empty func()) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=512k,mode=0700"); err != nil {
		t.Fatalf("mount a tmpfs for the state directory (the test needs root): %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	filler := filepath.Join(dir, "filler")
	fill = func() {
		f, err := os.Create(filler)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		buf := make([]byte, 4096)
		for {
			if _, err := f.Write(buf); err != nil {
				break
			}
		}
		for { // the last partial block
			if _, err := f.Write(buf[:1]); err != nil {
				break
			}
		}
	}
	empty = func() { os.Remove(filler) }
	return fill, empty
}

func holderOf(t *testing.T, c *client.Client, uuid string) string {
	t.Helper()
	st, err := c.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range st.Instances {
		if in.UUID == uuid {
			return string(in.State) + " " + in.Owner
		}
	}
	return "gone"
}

// A free that cannot write the checkpoint (a full disk) answers an error
// and leaves the instance with its holder: it is not handed to the next
// alloc. Once the disk has room, the same free succeeds.
func TestFreeOnFullDiskReleasesNothing(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	fill, empty := fullDisk(t, e.cfg.StateDir)
	c := runAgent(t, e.start(t))
	ctx := context.Background()
	r, err := c.Alloc(ctx, client.AllocRequest{Profile: "1g.5gb", Owner: "a"})
	if err != nil {
		t.Fatal(err)
	}
	fill()
	if err := c.Free(ctx, r.CDIName); err == nil {
		t.Fatal("free on a full disk: no error")
	}
	if got := holderOf(t, c, r.UUID); got != "in-use local:a" {
		t.Fatalf("after the failed free the instance is %q, want still in use by local:a", got)
	}
	empty()
	next, err := c.Alloc(ctx, client.AllocRequest{Profile: "1g.5gb", Owner: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if next.UUID == r.UUID {
		t.Fatalf("the next alloc got %s, which local:a still holds", r.UUID)
	}
	if err := c.FreeLease(ctx, r); err != nil {
		t.Fatalf("free once the disk has room: %v", err)
	}
	if got := holderOf(t, c, next.UUID); got != "in-use local:b" {
		t.Fatalf("local:b's instance is %q", got)
	}
}

// Concurrent holders that each free twice (a retry after a lost answer)
// never free one another's instance: every holder still holds its instance
// when it checks, and a free by lease is idempotent.
func TestConcurrentFreesAreIdempotentPerHolder(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	c := runAgent(t, e.start(t))
	ctx := context.Background()
	const workers, rounds = 6, 15
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("w%d", w)
			for range rounds {
				r, err := c.Alloc(ctx, client.AllocRequest{Profile: "1g.5gb", Owner: owner})
				if errors.Is(err, client.ErrConflict) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				if r.Lease == "" {
					errs <- fmt.Errorf("alloc answered no lease: %+v", r)
					return
				}
				if got := holderOf(t, c, r.UUID); got != "in-use local:"+owner {
					errs <- fmt.Errorf("%s allocated %s, which is now %q: another holder's free released it", owner, r.UUID, got)
					return
				}
				for range 2 {
					if err := c.FreeLease(ctx, r); err != nil {
						errs <- fmt.Errorf("%s: free %s: %w", owner, r.UUID, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
