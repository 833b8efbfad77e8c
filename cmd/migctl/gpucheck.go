package main

import (
	"fmt"

	"github.com/migpro/migpro/internal/ctl"
)

// exitError ends migctl with code: a recorded command's own status, or a
// failed doctor report. With no err nothing more is printed, since the
// command or the report has said it all.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

func (e exitError) Unwrap() error { return e.err }

// ExitCode is the status migctl exits with.
func (e exitError) ExitCode() int { return e.code }

func recordUsagef(format string, args ...any) error { return ctl.Usagef(format, args...) }

// sizeOf formats bytes in binary units.
func sizeOf(b uint64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}
