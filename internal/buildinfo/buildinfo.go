package buildinfo

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// Info is what a binary knows about its own build.
type Info struct {
	Version   string `json:"version"`
	Revision  string `json:"revision,omitempty"`
	Time      string `json:"time,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"goVersion"`
}

// version is the release version stamped at link time, the chart's
// appVersion and the images' tag (`make image` links with
// -X github.com/migpro/migpro/internal/buildinfo.version=<tag>). Empty: the
// module version Go recorded, often "(devel)".
var version string

// Read returns the running binary's build information. Fields the build did
// not record stay empty; Version is the stamped version, else the module's,
// else "(devel)".
func Read() Info {
	info := Info{Version: "(devel)"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		info = fromBuildInfo(bi)
	}
	if version != "" {
		info.Version = version
	}
	return info
}

func fromBuildInfo(bi *debug.BuildInfo) Info {
	info := Info{Version: bi.Main.Version, GoVersion: bi.GoVersion}
	if info.Version == "" {
		info.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.time":
			info.Time = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}

// String formats the information as one line headed by the program name, e.g.
// "migctl v0.3.0 (revision 1a2b3c4, 2026-11-23T20:00:00Z, modified) go1.24.1".
func (i Info) String() string { return i.Line("") }

// Line is String with a program name in front.
func (i Info) Line(program string) string {
	var b strings.Builder
	if program != "" {
		b.WriteString(program + " ")
	}
	b.WriteString(i.Version)
	var vcs []string
	if i.Revision != "" {
		vcs = append(vcs, "revision "+i.Revision)
	}
	if i.Time != "" {
		vcs = append(vcs, i.Time)
	}
	if i.Modified {
		vcs = append(vcs, "modified")
	}
	if len(vcs) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(vcs, ", "))
	}
	if i.GoVersion != "" {
		b.WriteString(" " + i.GoVersion)
	}
	return b.String()
}
