package telemetry

import (
	"errors"
	"net"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// proc is one shim process of a container, keyed by its host pid.
type proc struct {
	cur, peak     uint64
	seq           uint64
	total         uint64
	allocs, frees uint64
}

type container struct {
	reg  Registration
	dir  string
	sock string
	conn *net.UnixConn
	done chan struct{}

	mu       sync.Mutex
	ring     *ring
	procs    map[int32]*proc
	shimCur  uint64 // sum of procs' cur
	shimPeak uint64
	allocs   uint64 // cumulative over every process, exited ones included
	frees    uint64
	nvmlUsed uint64
	nvmlPeak uint64
	capacity uint64
	count    uint64
	tokens   float64
	refill   time.Time
}

func (c *container) endpoint() Endpoint {
	return Endpoint{ID: c.reg.ID, Dir: c.dir, Socket: c.sock}
}

func enablePassCred(conn *net.UnixConn) error {
	raw, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PASSCRED, 1)
	}); err != nil {
		return err
	}
	return serr
}

// senderPID pulls the kernel-attached SCM_CREDENTIALS pid out of oob. The
// kernel fills it in, so a container cannot pose as another process; 0 means
// none was attached.
func senderPID(oob []byte) int32 {
	const hdr = unix.SizeofCmsghdr
	if len(oob) < hdr+unix.SizeofUcred {
		return 0
	}
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	if h.Level != unix.SOL_SOCKET || h.Type != unix.SCM_CREDENTIALS || int(h.Len) < hdr+unix.SizeofUcred {
		return 0
	}
	return (*unix.Ucred)(unsafe.Pointer(&oob[hdr])).Pid
}

// readLoop drains one container's socket until it is closed.
func (s *Service) readLoop(c *container) {
	defer close(c.done)
	// One spare byte, plus MSG_TRUNC, tells oversized datagrams apart.
	buf := make([]byte, WireSize+1)
	oob := make([]byte, unix.CmsgSpace(unix.SizeofUcred))
	pause := time.Duration(float64(time.Second) / s.cfg.rate)
	for {
		n, oobn, flags, _, err := c.conn.ReadMsgUnix(buf, oob)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Transient errors (ENOBUFS and the like): back off briefly
			// rather than spin.
			time.Sleep(pause)
			continue
		}
		if !s.ingest(c, senderPID(oob[:oobn]), buf[:n], flags&syscall.MSG_TRUNC != 0) {
			// Over budget: stop reading for one token's time. The flood
			// then piles up in this container's socket buffer only, and its
			// own sends start failing with EAGAIN.
			time.Sleep(pause)
		}
	}
}

// ingest handles one datagram. It returns false when the container is over
// its rate budget.
func (s *Service) ingest(c *container, hostPID int32, b []byte, truncated bool) bool {
	// One clock read per datagram: on some VMs it is the dearest part of
	// ingest. It drives the rate budget and, with the real clock, the stamp.
	now := time.Now()
	at := now
	if !s.realClock {
		at = s.cfg.now()
	}
	c.mu.Lock()
	c.tokens += now.Sub(c.refill).Seconds() * s.cfg.rate
	c.refill = now
	if c.tokens > s.cfg.burst {
		c.tokens = s.cfg.burst
	}
	if c.tokens < 1 {
		c.mu.Unlock()
		s.st.rateLimited.Add(1)
		return false
	}
	c.tokens--
	if truncated || len(b) > WireSize {
		c.mu.Unlock()
		s.st.oversized.Add(1)
		return true
	}
	m, err := Decode(b)
	if err != nil {
		c.mu.Unlock()
		s.st.malformed.Add(1)
		return true
	}
	key := hostPID
	if key == 0 {
		key = int32(m.PID)
	}
	p := c.procs[key]
	if p == nil {
		if len(c.procs) >= s.cfg.maxProcesses {
			c.mu.Unlock()
			s.st.tooManyProcs.Add(1)
			return true
		}
		p = &proc{}
		c.procs[key] = p
	}
	if m.Seq <= p.seq {
		c.mu.Unlock()
		s.st.stale.Add(1)
		return true
	}
	p.seq = m.Seq
	c.shimCur = c.shimCur - p.cur + m.Current
	// Counts only grow within a process; a lower value is a broken sender
	// and must not wrap the container's totals.
	c.allocs += m.Allocs - min(m.Allocs, p.allocs)
	c.frees += m.Frees - min(m.Frees, p.frees)
	p.cur, p.peak, p.total, p.allocs, p.frees = m.Current, m.Peak, m.Total, max(p.allocs, m.Allocs), max(p.frees, m.Frees)
	c.shimPeak = max(c.shimPeak, c.shimCur, m.Peak)
	if m.Total > 0 && c.capacity == 0 {
		c.capacity = m.Total
	}
	if m.Flags&FlagExit != 0 {
		// The driver frees whatever an exiting process held.
		c.shimCur -= p.cur
		delete(c.procs, key)
	}
	smp := Sample{At: at, UsedBytes: c.shimCur, PeakBytes: c.shimPeak, RequestedBytes: c.shimCur, Source: SourceShim}
	c.ring.push(smp)
	c.count++
	id := c.reg.ID
	c.mu.Unlock()
	s.st.accepted.Add(1)
	s.publish(id, smp)
	return true
}

// procAlive is the default pid check.
func procAlive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}
