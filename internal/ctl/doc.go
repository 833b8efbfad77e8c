// Package ctl is the command-line plumbing that migctl and migpro-lab share:
// running a cobra root with one-line errors and exit codes (0, 1 for a
// failure, 2 for bad usage), the agent and output options with their
// environment defaults, one byte-quantity parser, JSON output, the
// pictures of GPU layouts, and finding the files a binary ships beside it
// (the shim, the simulated driver).
package ctl
