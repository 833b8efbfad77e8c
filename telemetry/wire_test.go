package telemetry

import (
	"bytes"
	"errors"
	"testing"
)

func validMsg() Message {
	return Message{Flags: FlagPeak, PID: 7, Dropped: 2, Seq: 3, MonoNs: 99, Current: 100, Peak: 150, Allocs: 4, Frees: 1, Total: 1 << 30}
}

func TestDecodeRoundTrip(t *testing.T) {
	b := Encode(make([]byte, WireSize), validMsg())
	got, err := Decode(b)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if got != validMsg() {
		t.Fatalf("Decode = %+v, want %+v", got, validMsg())
	}
	if string(b[:4]) != "MGP1" {
		t.Fatalf("magic bytes %q, want MGP1", b[:4])
	}
}

func TestDecodeRejects(t *testing.T) {
	good := Encode(make([]byte, WireSize), validMsg())
	mut := func(f func(b []byte)) []byte {
		b := bytes.Clone(good)
		f(b)
		return b
	}
	cases := map[string][]byte{
		"empty":        nil,
		"short":        good[:WireSize-1],
		"long":         append(bytes.Clone(good), 0),
		"magic":        mut(func(b []byte) { b[0] = 'X' }),
		"version":      mut(func(b []byte) { b[4] = 2 }),
		"unknown flag": mut(func(b []byte) { b[6] = 0x80 }),
		"reserved":     mut(func(b []byte) { b[79] = 1 }),
		"seq zero":     Encode(make([]byte, WireSize), Message{Current: 1, Peak: 1}),
		"peak<current": Encode(make([]byte, WireSize), Message{Seq: 1, Current: 2, Peak: 1}),
		"frees>allocs": Encode(make([]byte, WireSize), Message{Seq: 1, Allocs: 1, Frees: 2}),
	}
	for name, b := range cases {
		if _, err := Decode(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: Decode error %v, want ErrMalformed", name, err)
		}
	}
}

// FuzzDecode: the decoder must never panic, and whatever it accepts must
// re-encode to the same bytes (so nothing is silently ignored).
func FuzzDecode(f *testing.F) {
	f.Add(Encode(make([]byte, WireSize), validMsg()))
	f.Add([]byte("MGP1"))
	f.Add(make([]byte, WireSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if again := Encode(make([]byte, WireSize), m); !bytes.Equal(again, b) {
			t.Fatalf("accepted %x but re-encodes to %x", b, again)
		}
		if m.Peak < m.Current || m.Frees > m.Allocs || m.Seq == 0 {
			t.Fatalf("accepted inconsistent message %+v", m)
		}
	})
}

func TestRingKeepsNewest(t *testing.T) {
	r := newRing(3)
	if _, ok := r.last(); ok {
		t.Fatal("empty ring has a last sample")
	}
	for i := 1; i <= 5; i++ {
		r.push(Reading{UsedBytes: uint64(i)})
	}
	got := r.snapshot()
	if len(got) != 3 || got[0].UsedBytes != 3 || got[1].UsedBytes != 4 || got[2].UsedBytes != 5 {
		t.Fatalf("snapshot = %+v, want used 3,4,5", got)
	}
	if l, _ := r.last(); l.UsedBytes != 5 {
		t.Fatalf("last = %d, want 5", l.UsedBytes)
	}
}
