package telemetry

import (
	"errors"
	"net"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// procKey identifies a shim process: its pid as the kernel reported it to
// the agent (SCM_CREDENTIALS), or, when the sender's pid namespace is not
// visible to the agent (credentials say 0), the pid the datagram claims,
// kept in a separate key space.
type procKey struct {
	pid      int32
	verified bool // pid came from the kernel, so the pid check may prune it
}

// proc is one shim process of a container.
type proc struct {
	cur, seq      uint64
	allocs, frees uint64
}

type container struct {
	reg  Registration
	dir  string
	sock string
	conn *net.UnixConn
	done chan struct{}

	mu sync.Mutex
	// Delivery order for OnSample; see publish.
	pubMu    sync.Mutex
	pubCond  *sync.Cond
	pubNext  uint64 // guarded by mu
	pubDone  uint64 // guarded by pubMu
	ring     *ring
	procs    map[procKey]*proc
	shimCur  uint64 // sum of procs' cur
	shimPeak uint64
	allocs   uint64 // cumulative over every process, exited ones included
	frees    uint64
	nvmlUsed uint64
	nvmlPeak uint64
	// first is the first sample's time and lastShim the latest shim
	// sample: with nvmlUsed, the merged usage (usage.go).
	first    time.Time
	lastShim Sample
	capacity uint64
	count    uint64
	tokens   float64
	refill   time.Time
	// pidCheck: the agent could see the registered pid when it registered,
	// so a vanished pid later means the container is gone.
	pidCheck bool
	// pidNS is the registered pid's pid namespace, when pidCheck: every
	// sender must be in it.
	pidNS string
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

// batch is how many datagrams one recvmmsg call may return: one syscall per
// batch instead of per datagram is most of the socket path's cost.
const batch = 64

// mmsghdr mirrors struct mmsghdr (x/sys/unix has no recvmmsg wrapper). Go
// pads it exactly as C does.
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
}

// readLoop drains one container's socket until it is closed.
func (s *Service) readLoop(c *container) {
	defer close(c.done)
	// One spare byte per slot, plus MSG_TRUNC, tells oversized datagrams apart.
	const slot = WireSize + 1
	oobSize := unix.CmsgSpace(unix.SizeofUcred)
	bufs := make([]byte, batch*slot)
	oobs := make([]byte, batch*oobSize)
	iovs := make([]unix.Iovec, batch)
	hdrs := make([]mmsghdr, batch)
	for i := range hdrs {
		iovs[i].Base = &bufs[i*slot]
		iovs[i].SetLen(slot)
		hdrs[i].hdr.Iov = &iovs[i]
		hdrs[i].hdr.Iovlen = 1
		hdrs[i].hdr.Control = &oobs[i*oobSize]
	}
	raw, err := c.conn.SyscallConn()
	if err != nil {
		return
	}
	pause := time.Duration(float64(time.Second) / s.cfg.rate)
	for {
		var n int
		var rerr error
		err := raw.Read(func(fd uintptr) bool {
			for i := range hdrs {
				hdrs[i].hdr.SetControllen(oobSize)
				hdrs[i].hdr.Flags = 0
			}
			r, _, e := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&hdrs[0])), batch, unix.MSG_DONTWAIT, 0, 0)
			if e == unix.EAGAIN {
				return false // wait for the poller to say readable
			}
			if e != 0 {
				rerr = e
			}
			n = int(r)
			return true
		})
		if err != nil {
			return // closed
		}
		if rerr != nil {
			// Transient errors (ENOBUFS and the like): back off briefly
			// rather than spin.
			time.Sleep(pause)
			continue
		}
		limited := 0
		for i := range n {
			h := &hdrs[i]
			oob := oobs[i*oobSize : i*oobSize+int(h.hdr.Controllen)]
			if !s.ingest(c, senderPID(oob), bufs[i*slot:i*slot+int(h.n)], h.hdr.Flags&unix.MSG_TRUNC != 0) {
				limited++
			}
		}
		if limited > 0 {
			// Over budget: stop reading for as long as those datagrams
			// would have needed. The flood then piles up in this
			// container's socket buffer only, and its sends start failing
			// with EAGAIN.
			time.Sleep(time.Duration(limited) * pause)
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
	key := procKey{pid: hostPID, verified: true}
	if hostPID == 0 {
		key = procKey{pid: int32(m.PID)}
	}
	p := c.procs[key]
	if p == nil && !s.senderInContainer(c, hostPID) {
		c.mu.Unlock()
		s.st.foreign.Add(1)
		return true
	}
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
	p.cur, p.allocs, p.frees = m.Current, max(p.allocs, m.Allocs), max(p.frees, m.Frees)
	c.shimPeak = max(c.shimPeak, c.shimCur, m.Peak)
	if m.Total > 0 && c.capacity == 0 {
		c.capacity = m.Total
	}
	if m.Flags&FlagExit != 0 {
		// The driver frees whatever an exiting process held.
		c.shimCur -= p.cur
		delete(c.procs, key)
	}
	smp := Sample{At: at, UsedBytes: c.shimCur, PeakBytes: c.shimPeak, RequestedBytes: c.shimCur, Allocs: c.allocs, Source: SourceShim}
	c.ring.push(smp)
	c.count++
	s.st.accepted.Add(1)
	c.publish(s, smp)
	return true
}

// publish hands smp, and the merged usage it makes, to the subscribers in
// ring order. Called with c.mu held, which it releases. Each sample takes a ticket under c.mu and waits
// for its turn without holding c.mu, so the shim reader and the poller
// deliver one at a time and in ring order, and a subscriber may still call
// Samples.
func (c *container) publish(s *Service, smp Sample) {
	u := c.merge(smp)
	id, ticket := c.reg.ID, c.pubNext
	c.pubNext++
	c.mu.Unlock()
	c.pubMu.Lock()
	for c.pubDone != ticket {
		c.pubCond.Wait()
	}
	c.pubMu.Unlock()
	s.publish(id, smp, u)
	c.pubMu.Lock()
	c.pubDone++
	c.pubCond.Broadcast()
	c.pubMu.Unlock()
}

// procAlive is the default pid check.
func procAlive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// senderInContainer checks a new sender's kernel-attached pid (SCM_CREDENTIALS)
// against the registered container: it must be in the container's pid
// namespace. It runs once per new sender, under c.mu. When the agent could
// not see the container's pid at registration (no host pid namespace) there
// is nothing to compare with, and the directory modes are the only guard.
// A sender the agent cannot see at all (pid 0) while it can see the
// container is outside the container's namespace tree, hence foreign.
func (s *Service) senderInContainer(c *container, hostPID int32) bool {
	if !c.pidCheck || c.pidNS == "" || s.cfg.pidNSOf == nil {
		return true
	}
	if hostPID <= 0 {
		return false
	}
	return s.cfg.pidNSOf(int(hostPID)) == c.pidNS
}
