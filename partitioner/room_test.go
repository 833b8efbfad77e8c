package partitioner

import "testing"

func TestFreeRoomCountsBesideEveryRecord(t *testing.T) {
	p := newPart(t, newSim(t, "a100-40gb:2"))
	if got := p.FreeRoom("7g.40gb", 5); got != 2 {
		t.Fatalf("two empty A100s: room for %d 7g.40gb, want 2", got)
	}
	mustAlloc(t, p, "4g.20gb", "a")
	mustAlloc(t, p, "4g.20gb", "b")
	if got := p.FreeRoom("7g.40gb", 5); got != 0 {
		t.Errorf("a 4g on each GPU: room for %d 7g.40gb, want 0", got)
	}
	if got := p.FreeRoom("1g.5gb", 100); got != 6 {
		t.Errorf("a 4g on each GPU: room for %d 1g.5gb, want 6", got)
	}
	if got := p.FreeRoom("1g.5gb", 4); got != 4 {
		t.Errorf("limit 4: room for %d", got)
	}
	if got := p.FreeRoom("9g.99gb", 4); got != 0 {
		t.Errorf("unknown profile: room for %d", got)
	}
}
