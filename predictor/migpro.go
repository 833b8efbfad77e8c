package predictor

import "github.com/migpro/migpro/predictor/internal/ablate"

// migpro extends the baseline where it is weak:
//   - the fit covers only a sliding window of the peak series, so a warm-up
//     ramp leaves it instead of tilting it for the whole run;
//   - it fits four windows at once (Window, Window/2, Window/4, Window/8
//     samples), so growth that starts late is seen within a short window's
//     worth of samples, while a long window still sees slow growth and steps
//     up to a quarter of its length apart;
//   - with no horizon it marks on time to OOM: the upper bound a·t+b+z·σ
//     crosses capacity within a lead time tied to how long it has watched;
//   - it marks only on sustained growth (see growing), which turns a plateau,
//     the end of a warm-up, a periodic peak or bursts into "no";
//   - Persist consecutive positive samples are needed, after MinSamples.
//   - growth under a sawtooth, whose peak series climbs too rarely for the
//     quarter test when read once a second, is read apart in blocks (saw).
//   - on a series in seconds, runs of rises after the load are read apart
//     too (stairs): steady steps or a ramp whose OOM, at the run's own rate,
//     is projected within NearTime, before the windows' 24 s and quarter
//     tests could see them.
//   - on a series in seconds, teeth over a level base whose heights grow by
//     a steady factor (a batch-size search) are read apart too (teeth): the
//     next tooth, a factor over the standing one, would not fit.
//
// The peak series is fitted, not the raw one: bursts from temporary buffers
// raise it once and then leave it flat, so they cannot fake a trend.
type migpro struct {
	ring   []point // the last Window samples of the peak series
	head   int     // next slot to write
	count  int
	sinceR int // samples since the fits were last rebuilt from the ring
	// streak counts consecutive bins with a hit; hitBin is the last one.
	streak int
	hitBin int64
	sc     [scales]scale
	saw    saw
	stairs stairs
	teeth  teeth
	climbs climbs
}

// point is one bin: t, the peak so far (y), the raw usage and the count of
// driver allocation calls so far (0: unknown).
type point struct{ t, y, raw, allocs float64 }

// scale is a fit over the newest size points of the ring.
type scale struct {
	fit  linFit
	raw  linFit // the raw usage over the same window
	size int
	held int
}

const (
	scales   = 4
	quarters = 4
	// aliveRatio is the share of the fitted rise each older quarter must
	// reach, newestRatio the share for the newest quarter, where a warm-up
	// levelling off shows first. A noisy line's running peak stays near one.
	aliveRatio  = 0.6
	newestRatio = 0.75
	// decelRatio: a window whose slope is under this share of the rise over
	// the span just before it is the tail of a warm-up, not a trend.
	decelRatio = 0.75
	// jumpShare is the largest share of a window's rise its newest quarter
	// may hold; linear growth puts a quarter there.
	jumpShare = 0.6
	// stepShare is the share of a window's rise one step between two
	// neighbouring points may hold before jumpOnly discounts it.
	stepShare = 0.25
	// rawZ is the significance asked of the raw usage's slope. It is lower
	// than the peak's z: under a per-step sawtooth (activations filled and
	// freed every step) the raw series' residuals are the whole tooth, and at
	// z 2.576 growth under a sawtooth was seen only at the OOM.
	rawZ = 1.0
	// windowHorizonReach: with a horizon, a window that spans less than an
	// eviction time and projects its OOM sooner than this many times the
	// time watched (past a quarter of its way) is read as without a horizon
	// (steepWindow). Without the span's exemption a replay buffer whose
	// window projected its OOM right, late in its way, was then missed
	// (docs/predictor-round5.md).
	windowHorizonReach = 3
	// refreshEvery bounds rounding drift from add/remove on long runs. A
	// rebuild costs about 2·Window operations, so per sample the cost stays
	// O(1) amortised.
	refreshEvery = 4096
)

func newMigpro(window int) *migpro {
	m := &migpro{ring: make([]point, window), hitBin: -2}
	for i := range m.sc {
		m.sc[i].size = max(quarters+1, window>>i)
	}
	return m
}

// back returns the point k samples before the newest (k < count).
func (m *migpro) back(k int) point {
	n := len(m.ring)
	return m.ring[((m.head-1-k)%n+n)%n]
}

func (m *migpro) push(t, y, raw, allocs float64) {
	for i := range m.sc {
		s := &m.sc[i]
		if s.held == s.size {
			old := m.back(s.size - 1)
			s.fit.remove(old.t, old.y)
			s.raw.remove(old.t, old.raw)
		} else {
			s.held++
		}
		s.fit.add(t, y)
		s.raw.add(t, raw)
	}
	m.ring[m.head] = point{t, y, raw, allocs}
	m.head = (m.head + 1) % len(m.ring)
	m.count = min(m.count+1, len(m.ring))
	if m.sinceR++; m.sinceR >= refreshEvery {
		m.rebuild()
	}
}

// replace overwrites the newest point: a later sample in the same time bin.
func (m *migpro) replace(t, y, raw, allocs float64) {
	n := len(m.ring)
	i := (m.head - 1 + n) % n
	old := m.ring[i]
	for k := range m.sc {
		s := &m.sc[k]
		s.fit.remove(old.t, old.y)
		s.fit.add(t, y)
		s.raw.remove(old.t, old.raw)
		s.raw.add(t, raw)
	}
	m.ring[i] = point{t, y, raw, allocs}
	if m.sinceR++; m.sinceR >= refreshEvery {
		m.rebuild()
	}
}

func (m *migpro) rebuild() {
	for i := range m.sc {
		s := &m.sc[i]
		s.fit.reset()
		s.raw.reset()
		for k := s.held - 1; k >= 0; k-- {
			q := m.back(k)
			s.fit.add(q.t, q.y)
			s.raw.add(q.t, q.raw)
		}
	}
	m.sinceR = 0
}

func (m *migpro) step(p *Predictor, s Sample) (Mark, bool) {
	if p.newBin {
		m.push(s.T, p.peak, p.binRaw, p.allocs)
	} else {
		m.replace(s.T, p.peak, p.binRaw, p.allocs)
	}
	m.saw.observe(p.bin, s.T, float64(s.Used), p.cfg.Z)
	capacity := float64(p.cfg.Capacity)
	if p.peak >= capacity {
		// Already at the limit: nothing to forecast, no reason to wait.
		return m.decide(p, &m.sc[0], s.T, verdict{target: s.T, reason: ReasonOverCapacity})
	}
	if p.cfg.NearTime > 0 && !p.cfg.without(ablate.TrendGate) {
		m.stairs.observe(s.T, float64(s.Used), p.peak, p.allocs, capacity)
		m.climbs.observe(s.T, p.peak, stairsQuantum*capacity)
		if !p.cfg.without(ablate.Stairs) {
			if v, hit := m.stairs.check(p, s.T); hit {
				return m.decide(p, &m.sc[0], s.T, v)
			}
		}
		q := stairsQuantum * capacity
		m.teeth.observe(s.T, float64(s.Used), q)
		if v, hit := m.teeth.check(p, s.T, q); hit {
			return m.decide(p, &m.sc[0], s.T, v)
		}
		if v, hit := m.climbs.check(p, s.T); hit && !p.cfg.without(ablate.Climbs) {
			return m.decide(p, &m.sc[0], s.T, v)
		}
	}
	if p.bins < p.cfg.MinSamples {
		m.streak = 0
		return Mark{}, false
	}
	for i := range p.cfg.Scales {
		sc := &m.sc[i]
		if i > 0 && sc.held == m.sc[i-1].held {
			continue // same points as the longer window: nothing new to learn
		}
		if v, hit := m.check(p, sc, s.T); hit {
			return m.persist(p, sc, s.T, v)
		}
	}
	if !p.cfg.without(ablate.Sawtooth) && !p.cfg.without(ablate.TrendGate) {
		if v, hit := m.saw.check(p, s.T); hit {
			return m.persist(p, &m.sc[0], s.T, v)
		}
	}
	// No reset here: a bin without a hit breaks the run of consecutive bins
	// above, however many samples it holds.
	return Mark{}, false
}

// persist counts consecutive bins with a hit and marks after Persist.
func (m *migpro) persist(p *Predictor, sc *scale, now float64, v verdict) (Mark, bool) {
	if p.bin != m.hitBin {
		if p.bin == m.hitBin+1 {
			m.streak++
		} else {
			m.streak = 1
		}
		m.hitBin = p.bin
	}
	if m.streak < p.cfg.Persist {
		return Mark{}, false
	}
	return m.decide(p, sc, now, v)
}

// verdict is what check found: where to size the readmission (target),
// where to judge the chance of an OOM (riskAt), and the time to OOM.
type verdict struct {
	target, riskAt, tto float64
	reason              Reason
	saw                 bool // read on the sawtooth's blocks
	// rate and rateSD are a run of rises' rate and its uncertainty (see
	// stairs), zero for a window's verdict.
	rate, rateSD float64
}

// check reports whether one window sees sustained growth that exceeds
// capacity by the horizon or within the lead time.
func (m *migpro) check(p *Predictor, sc *scale, now float64) (verdict, bool) {
	if !m.growing(sc, p.cfg.Z, p.cfg.without(ablate.TrendGate)) {
		return verdict{}, false
	}
	capacity := float64(p.cfg.Capacity)
	// The load gate: NVML only, a window that holds the container's load
	// reads the load as its trend (docs/predictor.md, "Load gate").
	if p.cfg.NearTime > 0 && !p.cfg.without(ablate.LoadGate) && m.back(0).allocs == 0 && m.stairs.holdsLoad(m.back(sc.held-1).t, now) {
		return verdict{}, false
	}
	upper := func(t float64) float64 { return sc.fit.at(t) + p.cfg.Z*sc.fit.sigma() }
	// With a horizon, a window projected to run out within the eviction
	// time, or past a quarter of its way (steepWindow), is read as it is
	// without one: the horizon adds nothing there.
	if h := p.cfg.Horizon; h > now && !m.steepWindow(p, sc, now, capacity) {
		return verdict{target: h, riskAt: h, reason: ReasonHorizon}, upper(h) > capacity
	}
	elapsed := now - p.first
	lead := p.cfg.leadFor(m.riseLead(sc, &p.cfg), elapsed)
	if p.cfg.Horizon > now && !p.cfg.without(ablate.TrendGate) && m.climbs.stage(&p.cfg, elapsed) {
		// A steep window with a horizon, late in a run whose peak has
		// not climbed again and again: a stage of the run (stage).
		lead = min(lead, p.cfg.NearTime)
	}
	tto := max(0, (capacity-upper(now))/sc.fit.slope())
	if tto > lead || (!p.cfg.without(ablate.JumpGate) && m.jumpOnly(sc)) {
		return verdict{}, false
	}
	// With no horizon the size to readmit on is a guess: expect the run to
	// last as long again as it has, and at least until the crossing.
	return verdict{
		target: now + max(tto, elapsed), riskAt: now + lead, tto: tto, reason: ReasonTimeToOOM,
	}, true
}

// steepWindow reports whether a window, with a horizon, is asked the
// question without one: its OOM, on its fitted line, is projected within
// the eviction time (nearOOM) or, while the window spans less than an
// eviction time, sooner than windowHorizonReach times the time watched.
// Such a window is past a quarter of its way by its own line, so the
// horizon's early mark (by a quarter of the way) is not what it needs; a
// climb that steep which has not lasted an eviction time is a stage of the
// run (a checkpoint gathered, data piled up to a spilling limit, shards
// loaded), and growth that steep is asked the question without a horizon.
func (m *migpro) steepWindow(p *Predictor, sc *scale, now, capacity float64) bool {
	tto := (capacity - sc.fit.at(now)) / sc.fit.slope()
	young := now-m.back(sc.held-1).t < p.cfg.EvictionTime
	return nearOOM(&p.cfg, tto) || (young && steepForHorizon(&p.cfg, tto, now-p.first, windowHorizonReach))
}

// riseLead is the lead factor for a window, from the driver allocation
// calls behind its rise. A load copies weights one tensor per call, tens to
// hundreds of MiB each, and a cache reserved at once is one call; growth
// through a caching allocator comes in its 2 and 20 MiB segments, many calls
// to a window. A rise of at least bulk bytes per call reads as a load
// (BulkLeadFactor). Without the shim (allocs 0), or when no call explains
// the rise, the two cannot be told apart (BlindLeadFactor).
func (m *migpro) riseLead(sc *scale, cfg *Config) float64 {
	if cfg.without(ablate.BulkGate) {
		return cfg.LeadFactor
	}
	newest, oldest := m.back(0), m.back(sc.held-1)
	calls := newest.allocs - oldest.allocs
	switch {
	case newest.allocs == 0 || calls <= 0:
		return cfg.BlindLeadFactor
	case (newest.raw-oldest.raw)/calls >= cfg.BulkBytes:
		return cfg.BulkLeadFactor
	}
	return cfg.LeadFactor
}

// jumpOnly reports whether a window's rise is mostly one step: a one-shot
// jump (a KV cache preallocated in one call, a pool reserved at once) raises
// the level, not the trend. When the largest rise between two neighbouring
// points holds more than stepShare of the window's rise, the growth must go
// on after it: the points since the step must span a quarter of the window
// and rise at newestRatio of the fitted slope. A load that jumps to its level
// and stops fails; growth in regular steps, several to a window, passes. It
// runs only on a window that would otherwise mark, so its O(Window) scan is
// rare.
func (m *migpro) jumpOnly(sc *scale) bool {
	newest, oldest := m.back(0), m.back(sc.held-1)
	rise, span := newest.y-oldest.y, newest.t-oldest.t
	if rise <= 0 || span <= 0 {
		return false
	}
	var step float64
	at := 0
	for k := 0; k < sc.held-1; k++ {
		if d := m.back(k).y - m.back(k+1).y; d > step {
			step, at = d, k
		}
	}
	if step <= stepShare*rise {
		return false
	}
	after := m.back(at)
	dt := newest.t - after.t
	return dt < span/quarters || newest.y-after.y < newestRatio*sc.fit.slope()*dt
}

// growing is the trend gate for one window. The slope must be significant at
// z, and the peak must have risen in every quarter of the window by at least
// aliveRatio of what the fit predicts for that quarter. One jump (an
// evaluation peak, a new largest burst) rises in one quarter only; a warm-up
// levelling off fails its latest quarters; a plateau rises in none. Real
// growth, linear or in regular steps no longer than a quarter window, rises in
// all four. The raw usage must trend up as well, and a window must not be
// slower than the span before it.
func (m *migpro) growing(sc *scale, z float64, slopeOnly bool) bool {
	// Cheap tests first: most samples of a quiet series fail on the sign of
	// the slope or on the first quarter, before any square root.
	a := sc.fit.slope()
	if a <= 0 {
		return false
	}
	if !slopeOnly && !m.risesEachQuarter(sc, a) {
		return false
	}
	if a < z*sc.fit.slopeSE() {
		return false
	}
	if slopeOnly {
		return true
	}
	// The raw usage must trend up too. Growth lifts every sample; the peak
	// of bounded bursts climbs a staircase of new records while the usage
	// between bursts stays where it was.
	if r := sc.raw.slope(); r <= 0 || r < rawZ*sc.raw.slopeSE() {
		return false
	}
	return true
}

// risesEachQuarter is the quarter test and the deceleration check of growing.
func (m *migpro) risesEachQuarter(sc *scale, a float64) bool {
	k := (sc.held - 1) / quarters
	if k < 1 {
		return false
	}
	newer := m.back(0)
	// One step that dominates the window (a one-shot preallocation: vLLM's
	// KV cache, a pool reserved at once) is not a trend: the newest quarter
	// may hold at most jumpShare of the window's rise.
	if first := m.back(quarters * k); newer.y-first.y > 0 && newer.y-m.back(k).y > jumpShare*(newer.y-first.y) {
		return false
	}
	for i := 1; i <= quarters; i++ {
		older := m.back(i * k)
		dt := newer.t - older.t
		ratio := aliveRatio
		if i == 1 {
			ratio = newestRatio
		}
		if dt <= 0 || newer.y-older.y < ratio*a*dt {
			return false
		}
		newer = older
	}
	// A window shorter than the ring can see what came before it. If the
	// peak rose faster there, the growth is slowing down: the tail of a
	// warm-up, not a trend.
	if 2*sc.held <= m.count {
		end, start := m.back(sc.held-1), m.back(2*sc.held-1)
		if dt := end.t - start.t; dt > 0 && a < decelRatio*(end.y-start.y)/dt {
			return false
		}
	}
	return true
}

// decide builds the mark. Forecast is the upper bound at the target;
// Confidence is the fitted chance that usage exceeds capacity at riskAt (the
// horizon, or the end of the lead time). A run of rises (v.rate) is carried
// on at its rate, with the rate's uncertainty; a window by its fit.
func (m *migpro) decide(p *Predictor, sc *scale, now float64, v verdict) (Mark, bool) {
	d := Mark{Reason: v.reason, Forecast: toBytes(p.peak), Confidence: 1}
	f := &sc.fit
	if v.saw {
		f = &m.saw.fit
	}
	if v.reason == ReasonOverCapacity || (v.rate <= 0 && f.n < 2) {
		return d, true
	}
	at := func(t float64) (mean, sd float64) {
		if v.rate > 0 {
			dt := max(0, t-now)
			return p.peak + v.rate*dt, v.rateSD * dt
		}
		return max(f.at(t), p.peak), f.sigma()
	}
	central, sd := at(max(v.target, now))
	d.Forecast = toBytes(central + p.cfg.Z*sd)
	risk, riskSD := at(v.riskAt)
	d.Confidence = exceedProb(risk, riskSD, float64(p.cfg.Capacity))
	if v.reason == ReasonHorizon {
		d.Horizon = v.target
	} else {
		d.TimeToOOM = v.tto
	}
	return d, true
}

// forecast extrapolates the longest window only while it sees sustained
// growth; otherwise the peak so far is the best estimate of the peak to come,
// which is what keeps a finished warm-up from being projected to the horizon.
func (m *migpro) forecast(p *Predictor, t float64) (float64, bool) {
	sc := &m.sc[0]
	if sc.fit.n < 2 {
		return 0, false
	}
	if !m.growing(sc, p.cfg.Z, p.cfg.without(ablate.TrendGate)) {
		return p.peak, true
	}
	return max(sc.fit.at(t), p.peak), true
}
