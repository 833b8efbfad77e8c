package telemetry

// ring is a fixed-capacity buffer of the newest samples. It is not safe for
// concurrent use; the owning container's mutex guards it.
type ring struct {
	buf   []Reading
	start int // index of the oldest sample
	n     int
}

func newRing(capacity int) *ring { return &ring{buf: make([]Reading, capacity)} }

func (r *ring) push(s Reading) {
	if r.n < len(r.buf) {
		r.buf[(r.start+r.n)%len(r.buf)] = s
		r.n++
		return
	}
	// Full: overwrite the oldest, which keeps memory fixed however long the
	// container runs.
	r.buf[r.start] = s
	r.start = (r.start + 1) % len(r.buf)
}

// snapshot copies the samples out, oldest first.
func (r *ring) snapshot() []Reading {
	out := make([]Reading, r.n)
	for i := range r.n {
		out[i] = r.buf[(r.start+i)%len(r.buf)]
	}
	return out
}

func (r *ring) last() (Reading, bool) {
	if r.n == 0 {
		return Reading{}, false
	}
	return r.buf[(r.start+r.n-1)%len(r.buf)], true
}
