package demand

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// Two nodes see the same pending pod at the same resourceVersion and claim
// it at the same moment: the API server's optimistic concurrency lets
// exactly one patch through, and only that node provisions.
func TestTwoClaimersRaceForOnePod(t *testing.T) {
	for round := range 50 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			cs, _ := casClient(t, readyNode("node-a"), readyNode("node-b"),
				migPod("p", map[string]int64{"nvidia.com/mig-1g.5gb": 1}))
			provA := newProv(nil, map[string]int{"1g.5gb": 7})
			provB := newProv(nil, map[string]int{"1g.5gb": 7})
			a := newTestSource(t, cs, "node-a", provA)
			b := newTestSource(t, cs, "node-b", provB)
			a.refresh(t)
			b.refresh(t)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for _, s := range []*testSource{a, b} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					s.Reconcile(context.Background())
				}()
			}
			close(start)
			wg.Wait()
			winner := claimedBy(t, cs, "p")
			if winner != "node-a" && winner != "node-b" {
				t.Fatalf("claimed-by = %q after the race, want one of the two nodes", winner)
			}
			if total := provA.madeCount() + provB.madeCount(); total != 1 {
				t.Fatalf("%d instances made for one pod (a %d, b %d), want 1", total, provA.madeCount(), provB.madeCount())
			}
			winnerProv := map[string]*fakeProv{"node-a": provA, "node-b": provB}[winner]
			if winnerProv.madeCount() != 1 {
				t.Fatalf("%s holds the claim but did not provision", winner)
			}
			// Later passes of both, with the watch caught up, change nothing.
			a.pass(t)
			b.pass(t)
			if got := claimedBy(t, cs, "p"); got != winner || provA.madeCount()+provB.madeCount() != 1 {
				t.Fatalf("after more passes claimed-by %q (was %q), made a %d b %d", got, winner, provA.madeCount(), provB.madeCount())
			}
		})
	}
}
