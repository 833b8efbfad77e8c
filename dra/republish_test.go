package dra_test

import (
	"strconv"
	"testing"
	"time"
)

// Every unprepare reaches the published slices at once, not at the 30 s
// tick: a claim is prepared at the first 1g.5gb device and unprepared, many
// times in a row; each time the idle instance it leaves is the first fit
// again within two seconds.
func TestEveryUnprepareIsRepublished(t *testing.T) {
	e := newEnv(t, "a100-40gb:2")
	e.start()
	dev := e.firstOf("1g.5gb")
	for i := 0; i < 40; i++ {
		c := e.claim("c"+strconv.Itoa(i), dev)
		if r := e.prepare(c); r.Error != "" {
			t.Fatal(r.Error)
		}
		within(t, 2*time.Second, "round "+strconv.Itoa(i)+": the Prepare published", func() bool { return e.firstOf("1g.5gb") != dev })
		if err := e.unprepare(c); err != "" {
			t.Fatal(err)
		}
		within(t, 2*time.Second, "round "+strconv.Itoa(i)+": the Unprepare published", func() bool { return e.firstOf("1g.5gb") == dev })
	}
}

func within(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
