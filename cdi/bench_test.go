package cdi

import (
	"testing"

	"github.com/migpro/migpro/internal/quietlog"
)

// BenchmarkWrite measures one spec write: caps files read, nodes checked,
// spec built, encoded, validated by the library, fsynced and renamed.
func BenchmarkWrite(b *testing.B) {
	d := newDriverWithInstance(b)
	w, err := NewWriter(WithLogger(quietlog.New()), WithSpecDir(b.TempDir()))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := w.Write(testInstance, d.paths); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteFsync is BenchmarkWrite with WithFsync(true).
func BenchmarkWriteFsync(b *testing.B) {
	d := newDriverWithInstance(b)
	w, err := NewWriter(WithLogger(quietlog.New()), WithSpecDir(b.TempDir()), WithFsync(true))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := w.Write(testInstance, d.paths); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuild is Write without the file system: the spec itself.
func BenchmarkBuild(b *testing.B) {
	d := newDriverWithInstance(b)
	w, err := NewWriter(WithLogger(quietlog.New()), WithSpecDir(b.TempDir()))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := w.build(testInstance, d.paths); err != nil {
			b.Fatal(err)
		}
	}
}
