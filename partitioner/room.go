package partitioner

// FreeRoom counts how many more instances of profile fit in free space on
// the node, up to limit: placed lowest slot first on each GPU in turn,
// beside every instance recorded there (idle, in use or pending). It
// changes nothing.
func (p *Partitioner) FreeRoom(profile string, limit int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	total := 0
	for _, s := range p.slots {
		if total >= limit {
			break
		}
		if _, ok := s.profiles[profile]; !ok {
			continue
		}
		total += s.geo.FreeRoom(s.state(nil), profile, limit-total)
	}
	return total
}
