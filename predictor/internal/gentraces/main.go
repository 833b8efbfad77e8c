package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/migpro/migpro/predictor/trace"
	"github.com/migpro/migpro/predictor/tracegen"
)

func main() {
	out := flag.String("out", "testdata", "directory to write the traces into")
	seed := flag.Uint64("seed", tracegen.Seed, "generator seed")
	flag.Parse()
	if err := run(*out, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "gentraces:", err)
		os.Exit(1)
	}
}

func run(dir string, seed uint64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range tracegen.Families() {
		path := filepath.Join(dir, f.Name+".csv")
		fh, err := os.Create(path)
		if err != nil {
			return err
		}
		werr := trace.Write(fh, f.Generate(seed))
		if cerr := fh.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return fmt.Errorf("%s: %w", path, werr)
		}
	}
	return nil
}
