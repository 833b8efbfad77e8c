// Package eval scores a predictor configuration on memory traces the way
// migctl predict reports it: where it first marks, where the trace first
// exceeds capacity, the lead between the two, the peak forecast error after a
// tenth of the trace, and whether a trace that never exceeds capacity was
// marked anyway.
package eval
