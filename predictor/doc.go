// Package predictor forecasts a container's peak GPU memory from its memory
// series and decides when it must move to a larger MIG profile.
package predictor
