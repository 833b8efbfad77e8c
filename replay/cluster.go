package replay

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/migpro/migpro/estimator"
	"github.com/migpro/migpro/gpu/simgpu"
	"github.com/migpro/migpro/internal/quietlog"
	"github.com/migpro/migpro/partitioner"
	"github.com/migpro/migpro/partitioner/geometry"
)

// Profile is one instance size as the simulator sees it, read from the
// simulated driver's profile table.
type Profile struct {
	Name   string
	Slices int
	Slots  int
	Memory uint64 // bytes
}

// Model is a GPU model's geometry and the profiles jobs may request.
type Model struct {
	Name   string
	Slices int // compute slices of the whole GPU
	Slots  int // memory slots of the whole GPU
	// Profiles are the requestable profiles (media-engine "+me" variants
	// left out), tightest first as the estimator orders them.
	Profiles []Profile
	// Full is the whole-GPU profile.
	Full  Profile
	sizes []estimator.ProfileSize
	// geo is the model's MIG geometry (nil for a mixed node's union: each
	// of its GPUs has its own model).
	geo *geometry.Geometry
	// all is every requestable profile's shape (stranded slices).
	all geometry.ShapeSet
	// perGPU is, for a mixed node, each GPU's own model in node order; nil
	// when every GPU is this model.
	perGPU []*Model
}

// GPUsPerNode is how many GPUs a mixed node spec names; 0 for one model
// (the count comes from Config.GPUsPerNode).
func (m *Model) GPUsPerNode() int { return len(m.perGPU) }

// gpuModels are the distinct models of a node's GPUs, in node order: m
// itself when every GPU is m.
func (m *Model) gpuModels() []*Model {
	if m.perGPU == nil {
		return []*Model{m}
	}
	var out []*Model
	for _, gm := range m.perGPU {
		if !slices.Contains(out, gm) {
			out = append(out, gm)
		}
	}
	return out
}

// gpuModel is the model of a node's GPU li.
func (m *Model) gpuModel(li int) *Model {
	if m.perGPU == nil {
		return m
	}
	return m.perGPU[li]
}

// LoadModel reads a simulated model's profiles (simgpu.Models lists them).
// A mixed node is written as models with counts, "a100-40gb:2,h100-80gb:1":
// every node then has those GPUs, and the model returned offers the union
// of their profiles (a job asks for one by name, and only the GPUs offering
// it can serve it). The models of a mixed node must have the same number of
// compute slices, since a job's run time is given per share of the GPU.
func LoadModel(name string) (*Model, error) {
	if strings.ContainsAny(name, ":,") {
		return loadMixed(name)
	}
	profs, err := simgpu.ModelProfiles(name)
	if err != nil {
		return nil, err
	}
	m := &Model{Name: strings.ToLower(name)}
	if m.geo, err = geometry.New(profs, geometry.Config{}); err != nil {
		return nil, fmt.Errorf("model %s: %w", name, err)
	}
	for _, p := range profs {
		if len(p.Placements) == 0 {
			continue
		}
		m.Slots = max(m.Slots, p.Placements[0].Size)
		m.Slices = max(m.Slices, p.Slices)
		if strings.Contains(p.Name, "+") {
			continue
		}
		m.Profiles = append(m.Profiles, Profile{Name: p.Name, Slices: p.Slices, Slots: p.Placements[0].Size, Memory: p.MemoryMiB << 20})
	}
	if len(m.Profiles) == 0 {
		return nil, fmt.Errorf("model %s offers no MIG profiles", name)
	}
	m.rankProfiles()
	for _, p := range m.Profiles {
		m.all |= m.geo.ShapesOf(p.Name)
	}
	return m, nil
}

// rankProfiles orders the profiles by size and picks the whole-GPU one.
func (m *Model) rankProfiles() {
	for _, p := range m.Profiles {
		m.sizes = append(m.sizes, estimator.ProfileSize{Name: p.Name, MemoryBytes: p.Memory, Slices: p.Slices})
	}
	estimator.SortProfiles(m.sizes)
	sort.SliceStable(m.Profiles, func(i, j int) bool { return m.rank(m.Profiles[i].Name) < m.rank(m.Profiles[j].Name) })
	for _, p := range m.Profiles {
		if p.Slices > m.Full.Slices || (p.Slices == m.Full.Slices && p.Memory > m.Full.Memory) {
			m.Full = p
		}
	}
}

// loadMixed reads a mixed node spec (see LoadModel).
func loadMixed(spec string) (*Model, error) {
	spec = strings.ToLower(strings.TrimSpace(spec))
	u := &Model{Name: spec}
	loaded := map[string]*Model{}
	for _, part := range strings.Split(spec, ",") {
		name, count := strings.TrimSpace(part), 1
		if n, c, ok := strings.Cut(name, ":"); ok {
			k, err := strconv.Atoi(c)
			if err != nil || k < 1 || k > 64 {
				return nil, fmt.Errorf("node %s: bad GPU count %q for %s: want 1 to 64", spec, c, n)
			}
			name, count = n, k
		}
		m, ok := loaded[name]
		if !ok {
			var err error
			if m, err = LoadModel(name); err != nil {
				return nil, fmt.Errorf("node %s: %w", spec, err)
			}
			loaded[name] = m
		}
		if u.Slices != 0 && m.Slices != u.Slices {
			return nil, fmt.Errorf("node %s: %s has %d compute slices, %s %d: a mixed node needs models with the same number", spec, m.Name, m.Slices, u.perGPU[0].Name, u.Slices)
		}
		u.Slices, u.Slots = m.Slices, max(u.Slots, m.Slots)
		for range count {
			u.perGPU = append(u.perGPU, m)
		}
		if !ok {
			for _, p := range m.Profiles {
				if _, dup := u.Profile(p.Name); !dup {
					u.Profiles = append(u.Profiles, p)
				}
			}
		}
	}
	if len(u.perGPU) > 64 {
		return nil, fmt.Errorf("node %s: %d GPUs, at most 64", spec, len(u.perGPU))
	}
	u.rankProfiles()
	return u, nil
}

func (m *Model) rank(name string) int {
	for i, s := range m.sizes {
		if s.Name == name {
			return i
		}
	}
	return len(m.sizes)
}

func (m *Model) names() []string {
	out := make([]string, len(m.Profiles))
	for i, p := range m.Profiles {
		out[i] = p.Name
	}
	return out
}

// Largest is the most memory one instance offers.
func (m *Model) Largest() uint64 {
	var b uint64
	for _, p := range m.Profiles {
		b = max(b, p.Memory)
	}
	return b
}

// Profile looks a requestable profile up by name.
func (m *Model) Profile(name string) (Profile, bool) {
	for _, p := range m.Profiles {
		if p.Name == name {
			return p, true
		}
	}
	return Profile{}, false
}

// Pick is the tightest profile holding need bytes, as the estimator picks;
// the largest when nothing holds it.
func (m *Model) Pick(need uint64) Profile {
	ps, _ := estimator.Pick(m.sizes, need)
	p, _ := m.Profile(ps.Name)
	return p
}

// asked is the profile a job asks for: the one it names, else the tightest
// holding its declared memory.
func (m *Model) asked(j *Job) Profile {
	if p, ok := m.Profile(j.Profile); ok {
		return p
	}
	return m.Pick(declared(j))
}

// Grow is the profile a job moves to after running out of memory on cur
// without a better hint: the tightest with more memory. It returns cur when
// nothing is larger.
func (m *Model) Grow(cur Profile) Profile {
	best, found := cur, false
	for _, p := range m.Profiles {
		if p.Memory <= cur.Memory {
			continue
		}
		if !found || p.Memory < best.Memory || (p.Memory == best.Memory && p.Slices < best.Slices) {
			best, found = p, true
		}
	}
	return best
}

// MinSliceSeconds is the least slice-seconds a job can run in: over every
// profile that holds its peak, slices × run time there.
func (m *Model) MinSliceSeconds(j *Job) float64 {
	return leastOver(m.Profiles, j, func(p Profile) float64 { return float64(p.Slices) * j.Runtime(p.Slices, m.Slices) })
}

// MinRuntime is the shortest a job can run on any instance holding its peak.
func (m *Model) MinRuntime(j *Job) float64 {
	return leastOver(m.Profiles, j, func(p Profile) float64 { return j.Runtime(p.Slices, m.Slices) })
}

// leastOver is the least cost over the profiles that hold j's peak; -1 when
// none does.
func leastOver(profiles []Profile, j *Job, cost func(Profile) float64) float64 {
	best := -1.0
	for _, p := range profiles {
		if p.Memory < j.Mem.Peak {
			continue
		}
		if c := cost(p); best < 0 || c < best {
			best = c
		}
	}
	return best
}

// NVMLCost is the simulated time of one create or destroy of an instance
// with slices compute slices, on a GPU of gpuSlices: 0.1 s for the smallest
// instance to 0.4 s for the whole GPU, sizes between interpolated linearly.
func NVMLCost(slices, gpuSlices int) float64 {
	if gpuSlices <= 1 {
		return 0.4
	}
	f := float64(min(max(slices, 1), gpuSlices)-1) / float64(gpuSlices-1)
	return 0.1 + 0.3*f
}

// node is one machine: its simulated driver and the partitioner an agent
// would run on it.
type node struct {
	idx  int
	sim  *simgpu.Node
	part *partitioner.Partitioner
	gpus []*gpuSlot
	// used is the compute slices of every instance on the node, idle or
	// not; the cluster-level choice packs busier nodes first.
	used int
	pcie *pcieCtx
	// placing is the profile being planned or committed (the hami
	// baseline's policy scores by it).
	placing Profile
}

// gpuSlot is the engine's view of one GPU.
type gpuSlot struct {
	global int
	// nvmlFree is when the GPU's serialised NVML queue is next free.
	nvmlFree float64
	// heavyHeld counts PCIe-heavy runs holding an instance (starting or
	// running), for the PCIe-aware choice; busy lists running runs and
	// heavyBusy the PCIe-heavy ones among them, for the slowdown.
	heavyHeld int
	heavyBusy int
	busy      []*run
	// heldSlices and heldSlots are what the runs holding instances on the
	// GPU use: space no decision can reclaim.
	heldSlices int
	heldSlots  uint16
	// model is the GPU's own model (its profiles and placements).
	model *Model
	// strandSince is when the stranded slices were last summed into
	// strandSum (slice-seconds; metrics.go).
	strandSince, strandSum float64
	// strandSeries is the stranded slices over time, a point at every
	// change (metrics.go).
	strandSeries []StrandPoint
}

// mayFit is a necessary condition for a profile to be placed on the GPU
// without touching a held instance: enough free compute slices and a legal
// placement clear of held slots. It lets the engine skip asking a
// partitioner whose answer can only be "wait".
func (g *gpuSlot) mayFit(p Profile) bool {
	return g.model.geo.MayFit(g.heldSlots, g.heldSlices, p.Name)
}

// quietLogger is the simulated nodes' logger: it writes nothing, and at
// error level nothing below is even formatted.
func quietLogger() logrus.FieldLogger {
	l := quietlog.New()
	l.SetLevel(logrus.ErrorLevel)
	return l
}

// newCluster builds nodes×gpus simulated GPUs, one partitioner per node.
// clock is the simulated time (the demand mix decays by it); policy makes each node's placement policy (it may hold per-node state).
func newCluster(model *Model, nodes, gpus int, seed int64, clock func() time.Time, policy func(*node) partitioner.Policy) ([]*node, error) {
	out := make([]*node, 0, nodes)
	fail := func(err error) ([]*node, error) {
		closeNodes(out)
		return nil, err
	}
	for i := 0; i < nodes; i++ {
		spec := fmt.Sprintf("%s:%d", model.Name, gpus)
		if model.perGPU != nil {
			spec = model.Name
		}
		sn, err := simgpu.NewNode(spec, simgpu.WithSeed(seed+int64(i)), simgpu.WithLogger(quietLogger()))
		if err != nil {
			return fail(fmt.Errorf("node %d: %w", i, err))
		}
		nd := &node{idx: i, sim: sn}
		for g := 0; g < gpus; g++ {
			nd.gpus = append(nd.gpus, &gpuSlot{global: i*gpus + g, model: model.gpuModel(g)})
		}
		nd.pcie = &pcieCtx{node: nd}
		part, err := partitioner.New(sn, partitioner.WithPolicy(policy(nd)), partitioner.WithLogger(quietLogger()), partitioner.WithClock(clock))
		if err != nil {
			_ = sn.Close()
			return fail(fmt.Errorf("node %d: %w", i, err))
		}
		nd.part = part
		out = append(out, nd)
	}
	return out, nil
}

func closeNodes(nodes []*node) {
	for _, n := range nodes {
		_ = n.sim.Close()
	}
}
