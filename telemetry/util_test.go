package telemetry

import "os"

func mkdirTemp() (string, error) { return os.MkdirTemp("", "tb") }
