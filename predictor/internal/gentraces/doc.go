// Command gentraces writes the synthetic traces of package tracegen into a
// directory, one CSV per family, from a fixed seed. Run through go generate
// in package predictor; the tracegen tests check the files have not drifted.
package main
