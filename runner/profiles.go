package runner

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// profileName matches MIG profile names: "1g.5gb", "1g.10gb+me",
// "1c.2g.10gb" (a compute instance profile), "3g.40gb".
var profileName = regexp.MustCompile(`^(?:\d+c\.)?(\d+)g\.(\d+)gb(?:\+.*)?$`)

type profileSize struct {
	name           string
	slices, memGiB int
	plain          bool // no "+" variant (media engines and such)
}

func parseProfile(name string) (profileSize, bool) {
	m := profileName.FindStringSubmatch(name)
	if m == nil {
		return profileSize{}, false
	}
	g, err1 := strconv.Atoi(m[1])
	mem, err2 := strconv.Atoi(m[2])
	if err1 != nil || err2 != nil {
		return profileSize{}, false
	}
	return profileSize{name: name, slices: g, memGiB: mem, plain: !strings.Contains(name, "+")}, true
}

// NextLarger returns the offered profile with the least memory above
// current's, preferring fewer slices and plain profiles on a tie (so scarce
// slices and media engines stay free, as estimator.Pick does), or "" when
// nothing offered is larger or current is not a MIG profile name. Memory is
// read from the names, which is all the agent's local API gives: it is the
// fallback for a mark without a recommendation.
func NextLarger(current string, offered []string) string {
	cur, ok := parseProfile(current)
	if !ok {
		return ""
	}
	var larger []profileSize
	for _, o := range offered {
		if p, ok := parseProfile(o); ok && p.memGiB > cur.memGiB {
			larger = append(larger, p)
		}
	}
	if len(larger) == 0 {
		return ""
	}
	sort.Slice(larger, func(i, j int) bool {
		a, b := larger[i], larger[j]
		if a.memGiB != b.memGiB {
			return a.memGiB < b.memGiB
		}
		if a.slices != b.slices {
			return a.slices < b.slices
		}
		if a.plain != b.plain {
			return a.plain
		}
		return a.name < b.name
	})
	return larger[0].name
}
