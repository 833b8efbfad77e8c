package cdi

import (
	"os"
	"testing"

	specs "tags.cncf.io/container-device-interface/specs-go"

	"github.com/migpro/migpro/hook"
	"github.com/migpro/migpro/internal/quietlog"
)

// BenchmarkWriteCompare writes one instance's spec the way migpro did before
// the driver was added (device nodes, env, telemetry edits) and with the
// driver's edits from nvcdi, in one run, and reports each spec's size in
// bytes ("spec-bytes"). Run:
//
//	go test ./cdi -run '^$' -bench WriteCompare -benchtime 2000x
func BenchmarkWriteCompare(b *testing.B) {
	f := newSimFixture(b, testDriverVersion)
	extra := WithExtraEdits(telemetryEditsForBench())
	for _, c := range []struct {
		name string
		opts []Option
	}{
		{"devices-only", []Option{extra}},
		{"with-driver", []Option{extra, WithDriver(f.driver(false))}},
	} {
		b.Run(c.name, func(b *testing.B) {
			w, err := NewWriter(append([]Option{WithLogger(quietlog.New()), WithSpecDir(b.TempDir())}, c.opts...)...)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := w.Write(f.inst, f.node.Paths()); err != nil {
					b.Fatal(err)
				}
			}
			p, _ := w.SpecPath(f.inst.UUID)
			fi, err := os.Stat(p)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(fi.Size()), "spec-bytes")
		})
	}
}

// telemetryEditsForBench are the hook package's telemetry edits, as the agent
// passes them.
func telemetryEditsForBench() specs.ContainerEdits {
	return hook.CDIEdits(hook.EditsConfig{}).ContainerEdits()
}

// BenchmarkDriverDiscovery is what the driver adds once per agent start:
// nvcdi's discovery of the driver's files under the driver root.
func BenchmarkDriverDiscovery(b *testing.B) {
	f := newSimFixture(b, testDriverVersion)
	for b.Loop() {
		if _, err := f.driver(false).CommonEdits(); err != nil {
			b.Fatal(err)
		}
	}
}
