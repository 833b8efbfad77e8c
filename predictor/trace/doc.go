// Package trace reads and writes memory traces, the CSV files migctl predict
// scores the predictor on and the synthetic generator produces.
//
// A trace has a header row and one row per sample:
//
//	t,used_bytes[,requested_bytes][,reserved_bytes]
//
// t is seconds or an iteration index and never decreases. used_bytes is the
// memory the program actively holds, the quantity that causes an OOM.
// requested_bytes is what it asked its allocator for (zero or empty when
// unknown); reserved_bytes is the framework's cache, recorded for reference
// and never used for prediction. Optional columns may come in either order;
// unknown columns are an error so that a typo is not silently ignored.
package trace
