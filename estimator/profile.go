package estimator

import (
	"fmt"
	"sort"
	"strings"
)

// ProfileSize is what sizing needs to know about a MIG profile. Callers
// convert from their own profile type (NVML, the simulator), which keeps this
// package free of any GPU dependency.
type ProfileSize struct {
	Name        string `json:"name"`
	MemoryBytes uint64 `json:"memoryBytes"`
	Slices      int    `json:"slices"`
}

// Need is a memory requirement broken into the parts the one-line
// explanation shows.
type Need struct {
	// Bytes is the workload's own memory (declared, formula or history).
	Bytes uint64
	// Margin is the relative headroom added to Bytes (0.1 = 10%).
	Margin float64
	// ContextBytes is the CUDA context overhead, added after the margin.
	ContextBytes uint64
}

// Total is Bytes×(1+Margin)+ContextBytes, rounded up.
func (n Need) Total() uint64 {
	b := n.Bytes
	if n.Margin > 0 {
		b += uint64(float64(n.Bytes)*n.Margin + 0.999999)
	}
	return b + n.ContextBytes
}

// Pick returns the tightest profile whose memory holds need. Ties in memory go
// to fewer compute slices (a 1g.10gb rather than a 2g.10gb), then to a plain
// profile over a "+me" variant, so that scarce slices and media engines stay
// free. ok is false when nothing holds need; the largest profile is then
// returned so the caller can still say what was closest.
func Pick(profiles []ProfileSize, need uint64) (p ProfileSize, ok bool) {
	best, largest := -1, -1
	for i, q := range profiles {
		if largest < 0 || q.MemoryBytes > profiles[largest].MemoryBytes {
			largest = i
		}
		if q.MemoryBytes < need {
			continue
		}
		if best < 0 || tighter(q, profiles[best]) {
			best = i
		}
	}
	if best >= 0 {
		return profiles[best], true
	}
	if largest >= 0 {
		return profiles[largest], false
	}
	return ProfileSize{}, false
}

func tighter(a, b ProfileSize) bool {
	if a.MemoryBytes != b.MemoryBytes {
		return a.MemoryBytes < b.MemoryBytes
	}
	if a.Slices != b.Slices {
		return a.Slices < b.Slices
	}
	ap, bp := strings.Contains(a.Name, "+"), strings.Contains(b.Name, "+")
	if ap != bp {
		return !ap
	}
	return a.Name < b.Name
}

// SortProfiles orders profiles tightest first, the order Pick prefers.
func SortProfiles(profiles []ProfileSize) {
	sort.SliceStable(profiles, func(i, j int) bool { return tighter(profiles[i], profiles[j]) })
}

// FormatBytes renders bytes as GiB with one decimal ("7.0 GiB", "0.5 GiB"),
// or MiB below a tenth of a GiB, which is how people read GPU memory.
func FormatBytes(b uint64) string {
	const mib, gib = 1 << 20, 1 << 30
	if b >= gib/10 {
		return fmt.Sprintf("%.1f GiB", float64(b)/gib)
	}
	return fmt.Sprintf("%.0f MiB", float64(b)/mib)
}
