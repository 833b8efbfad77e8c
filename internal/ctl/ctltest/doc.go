// Package ctltest starts the real migpro agent in-process on a simulated
// A100-40GB for the tests of migctl and migpro-lab, which drive their
// commands against its local API.
package ctltest
