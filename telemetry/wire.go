package telemetry

import "github.com/migpro/migpro/telemetry/wire"

// The shim's datagram lives in telemetry/wire; these names keep the
// service's callers as they were.
const (
	WireSize    = wire.WireSize
	WireVersion = wire.WireVersion
	FlagPeak    = wire.FlagPeak
	FlagExit    = wire.FlagExit
)

// Message is one decoded shim datagram.
type Message = wire.Message

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = wire.ErrMalformed

// Decode parses one datagram (wire.Decode).
func Decode(b []byte) (Message, error) { return wire.Decode(b) }

// Encode writes m as a datagram into b (wire.Encode).
func Encode(b []byte, m Message) []byte { return wire.Encode(b, m) }
