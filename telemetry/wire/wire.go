package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The shim's datagram, version 1. Fixed size, little-endian, no padding; the
// layout is documented in docs/hook.md and mirrored by hook/shim/migpro_shim.c.
//
//	off size field
//	  0    4 magic   "MGP1"
//	  4    2 version 1
//	  6    2 flags   FlagPeak | FlagExit
//	  8    4 pid     (in the container's pid namespace; informational)
//	 12    4 dropped samples the shim could not send since the last one
//	 16    8 seq     per-process sequence number, starts at 1
//	 24    8 monoNs  CLOCK_MONOTONIC of the sender
//	 32    8 current bytes live through the driver allocation calls
//	 40    8 peak    highest current since the process started
//	 48    8 allocs  successful allocation calls
//	 56    8 frees   successful free calls
//	 64    8 total   device memory from the last cuMemGetInfo (0: unknown)
//	 72    8 reserved, must be 0
const (
	WireSize    = 80
	WireVersion = 1
	wireMagic   = 0x3150474d // "MGP1" read as little-endian uint32
)

// Wire flags.
const (
	// FlagPeak marks a sample sent because current reached a new peak.
	FlagPeak = 1 << 0
	// FlagExit marks the process's last sample, sent from the shim's destructor.
	FlagExit  = 1 << 1
	knownFlag = FlagPeak | FlagExit
)

// Message is one decoded shim datagram.
type Message struct {
	Flags   uint16
	PID     uint32
	Dropped uint32
	Seq     uint64
	MonoNs  uint64
	Current uint64
	Peak    uint64
	Allocs  uint64
	Frees   uint64
	Total   uint64
}

// ErrMalformed is wrapped by every decoding error, so callers can count them
// with errors.Is.
var ErrMalformed = errors.New("malformed telemetry datagram")

// Decode parses one datagram. It never panics and never allocates beyond the
// returned error; anything but an exact, self-consistent v1 datagram is
// rejected.
func Decode(b []byte) (Message, error) {
	var m Message
	if len(b) != WireSize {
		return m, fmt.Errorf("%w: %d bytes, want %d", ErrMalformed, len(b), WireSize)
	}
	le := binary.LittleEndian
	if le.Uint32(b[0:]) != wireMagic {
		return m, fmt.Errorf("%w: bad magic %#x", ErrMalformed, le.Uint32(b[0:]))
	}
	if v := le.Uint16(b[4:]); v != WireVersion {
		return m, fmt.Errorf("%w: version %d, want %d", ErrMalformed, v, WireVersion)
	}
	m.Flags = le.Uint16(b[6:])
	m.PID = le.Uint32(b[8:])
	m.Dropped = le.Uint32(b[12:])
	m.Seq = le.Uint64(b[16:])
	m.MonoNs = le.Uint64(b[24:])
	m.Current = le.Uint64(b[32:])
	m.Peak = le.Uint64(b[40:])
	m.Allocs = le.Uint64(b[48:])
	m.Frees = le.Uint64(b[56:])
	m.Total = le.Uint64(b[64:])
	switch {
	case m.Flags&^knownFlag != 0:
		return Message{}, fmt.Errorf("%w: unknown flags %#x", ErrMalformed, m.Flags)
	case le.Uint64(b[72:]) != 0:
		return Message{}, fmt.Errorf("%w: reserved field set", ErrMalformed)
	case m.Seq == 0:
		return Message{}, fmt.Errorf("%w: sequence 0", ErrMalformed)
	case m.Peak < m.Current:
		return Message{}, fmt.Errorf("%w: peak %d below current %d", ErrMalformed, m.Peak, m.Current)
	case m.Frees > m.Allocs:
		return Message{}, fmt.Errorf("%w: %d frees exceed %d allocations", ErrMalformed, m.Frees, m.Allocs)
	}
	return m, nil
}

// Encode writes m as a v1 datagram into b, which must hold WireSize bytes.
// The shim is the real producer; Encode exists for tests and tools.
func Encode(b []byte, m Message) []byte {
	b = b[:WireSize]
	le := binary.LittleEndian
	le.PutUint32(b[0:], wireMagic)
	le.PutUint16(b[4:], WireVersion)
	le.PutUint16(b[6:], m.Flags)
	le.PutUint32(b[8:], m.PID)
	le.PutUint32(b[12:], m.Dropped)
	le.PutUint64(b[16:], m.Seq)
	le.PutUint64(b[24:], m.MonoNs)
	le.PutUint64(b[32:], m.Current)
	le.PutUint64(b[40:], m.Peak)
	le.PutUint64(b[48:], m.Allocs)
	le.PutUint64(b[56:], m.Frees)
	le.PutUint64(b[64:], m.Total)
	le.PutUint64(b[72:], 0)
	return b
}
