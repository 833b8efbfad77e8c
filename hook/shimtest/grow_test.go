package shimtest

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/migpro/migpro/telemetry"
)

// The grow step allocates a fixed amount at a steady pace and prints the
// bytes it holds after each allocation, so a test can tell how far a run got
// from the program's own output.
func TestPatternGrow(t *testing.T) {
	a := artifacts(t)
	s, ep := service(t)
	steps := []string{"alloc:500", "grow:1000:4:30", "free:0", "info"}
	want, err := Expect(steps)
	if err != nil {
		t.Fatal(err)
	}
	if want != (Expected{Current: 4000, Peak: 4500, Allocs: 5, Frees: 1}) {
		t.Fatalf("Expect(%v) = %+v", steps, want)
	}
	cmd := exec.Command(a.Pattern, steps...)
	cmd.Env = []string{"LD_PRELOAD=" + a.Shim, "MIGPRO_TELEMETRY_SOCKET=" + ep.Socket, "STUB_TOTAL_BYTES=1048576000"}
	start := time.Now()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pattern %v: %v\n%s", steps, err, out)
	}
	if el := time.Since(start); el < 90*time.Millisecond {
		t.Errorf("4 steps 30 ms apart took %v, want at least 90ms", el)
	}
	var wantOut strings.Builder
	for i := 1; i <= 4; i++ {
		fmt.Fprintf(&wantOut, "grow %d/4 live=%d\n", i, 500+1000*i)
	}
	if string(out) != wantOut.String() {
		t.Errorf("output %q, want %q", out, wantOut.String())
	}
	e := waitTop(t, s, func(e telemetry.TopEntry) bool { return e.Samples > 0 && e.Processes == 0 })
	if e.Allocs != want.Allocs || e.Frees != want.Frees || e.PeakBytes != want.Peak {
		t.Errorf("top %+v, want %+v", e, want)
	}
	if _, err := Expect([]string{"grow:10:x:5"}); err == nil {
		t.Error("Expect accepted a bad grow step")
	}
}
