package main

import (
	"testing"

	"github.com/migpro/migpro/internal/ctl/ctltest"
)

// runAgent runs a real agent in-process on a simulated A100-40GB.
func runAgent(t *testing.T) string { return ctltest.Agent(t, "migctl-test.dev/mig", 0) }
