package ablate

// Switch names the readings to switch off; combine them with |.
type Switch uint8

const (
	// TrendGate drops the quarter-by-quarter rise check and keeps only the
	// slope's significance (and, with it, the runs of rises and the
	// sawtooth reading, which are trend tests too).
	TrendGate Switch = 1 << iota
	// JumpGate drops the check that a window's rise is not one step that
	// growth does not follow.
	JumpGate
	// Sawtooth drops the reading of growth under a sawtooth.
	Sawtooth
	// BulkGate reads every rise as growth, whatever its allocation calls.
	BulkGate
	// Stairs drops the reading of runs of rises.
	Stairs
	// LoadGate lets a window that holds the container's load mark without
	// a horizon and without the shim.
	LoadGate
	// Climbs drops the reading of growth in rounds (climbs after holds).
	Climbs
)

// Without returns cfg, a predictor.Config, with the readings in s switched
// off. Package predictor sets it when it is initialised (it cannot be
// written here: predictor imports this package).
var Without func(cfg any, s Switch) any
