// Package quietlog makes the one logger that writes nothing, for code that
// must be given a logger whose output nobody reads.
package quietlog
