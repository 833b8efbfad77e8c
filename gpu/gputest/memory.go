package gputest

import "fmt"

// Memory is a fixed reading of each MIG instance's memory, by MIG UUID:
// {used, total} bytes. An instance not listed is an error, as NVML's answer
// for an instance that is gone.
type Memory map[string][2]uint64

// InstanceMemory is the reading of the instance migUUID.
func (m Memory) InstanceMemory(migUUID string) (used, total uint64, err error) {
	r, ok := m[migUUID]
	if !ok {
		return 0, 0, fmt.Errorf("instance %s: no such instance", migUUID)
	}
	return r[0], r[1], nil
}
