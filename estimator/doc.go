// Package estimator picks the first MIG profile for a workload from declared
// memory, a model-size formula, or the peaks of earlier runs.
package estimator
