// Package ablate switches off one of migpro's readings at a time, for the
// tests that measure what each reading buys (the ablations of
// predictor/eval and the predictor's own tests). It is internal, so the
// switches are no part of predictor.Config's public API: a user cannot turn
// a gate off.
package ablate
