package demand

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Event reasons recorded on pods.
const (
	ReasonClaimed     = "MIGClaimed"
	ReasonProvisioned = "MIGProvisioned"
	ReasonReleased    = "MIGClaimReleased"
)

// wanted is a pending, unschedulable pod that asks for MIG resources.
type wanted struct {
	pod     *corev1.Pod
	claim   claim
	need    Need
	foreign []string
}

// pass is the bookkeeping of one reconcile pass: idle instances by profile,
// counted once, and those reserved by this node's claims so far.
type pass struct {
	avail map[string]int
	keep  Reserved
	nodes map[string]string // claimer node -> why it is gone ("" if alive)
}

func (s *Source) idle(p *pass, profile string) int {
	if v, ok := p.avail[profile]; ok {
		return v
	}
	v := s.cfg.Provisioner.IdleCount(profile)
	p.avail[profile] = v
	return v
}

func (s *Source) spare(p *pass, profile string) int { return s.idle(p, profile) - p.keep[profile] }

// Reconcile runs one pass over the pending pods: first this node's own
// claims (oldest first), which reserve idle instances and get any missing
// ones provisioned, then the unclaimed and stale ones, which this node
// claims if it can serve them. Run calls it on every watch event and every
// Resync; tests call it directly.
func (s *Source) Reconcile(ctx context.Context) {
	now := s.cfg.Now()
	var mine, others []wanted
	for _, pod := range s.pods() {
		if !pending(pod) || !unschedulable(pod) {
			continue
		}
		need, foreign := podNeed(pod, s.cfg.Domain, s.cfg.Resources)
		if len(need) == 0 && len(foreign) == 0 {
			continue
		}
		w := wanted{pod: pod, claim: readClaim(pod), need: need, foreign: foreign}
		if w.claim.by == s.cfg.NodeName {
			mine = append(mine, w)
		} else {
			others = append(others, w)
		}
	}
	waiting, known := Need{}, true
	defer func() {
		if known {
			s.observePending(waiting)
		}
	}()
	if len(mine) == 0 && len(others) == 0 {
		return
	}
	sort.SliceStable(mine, func(i, j int) bool { return mine[i].claim.at.Before(mine[j].claim.at) })
	sort.SliceStable(others, func(i, j int) bool {
		a, b := others[i].pod, others[j].pod
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return podKey(a) < podKey(b)
	})
	node, err := s.cfg.Client.CoreV1().Nodes().Get(ctx, s.cfg.NodeName, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		if ctx.Err() == nil {
			s.log.WithError(err).Warn("read this node; skipping the pass")
		}
		known = false // what waits is unknown: keep the last report
		return
	}
	if err != nil {
		node = nil
	}
	p := &pass{avail: map[string]int{}, keep: Reserved{}, nodes: map[string]string{}}
	for _, w := range mine {
		if s.serveOwn(ctx, p, w, node, now) {
			waiting.add(w.need)
		}
	}
	if node == nil {
		if len(others) > 0 {
			s.log.Debug("this node is not registered with the API server: claiming nothing")
		}
		return
	}
	for _, w := range others {
		if s.tryClaim(ctx, p, w, node, now) {
			waiting.add(w.need)
		}
	}
}

// observePending reports what waits to the provisioner, if it listens.
func (s *Source) observePending(waiting Need) {
	po, ok := s.cfg.Provisioner.(PendingObserver)
	if !ok {
		return
	}
	if len(waiting) == 0 {
		po.ObservePending(nil)
		return
	}
	po.ObservePending(map[string]int(waiting))
}

// serveOwn keeps a claim of this node served, or gives it up. It reports
// whether the pod is left waiting for room on this node: the claim was
// given up only because the instances could not be made now.
func (s *Source) serveOwn(ctx context.Context, p *pass, w wanted, node *corev1.Node, now time.Time) bool {
	c := w.claim
	switch {
	case c.bad != "":
		s.giveUp(ctx, w.pod, now, "unreadable claim: "+c.bad)
		return false
	case !c.provisionedAt.IsZero() && now.Sub(c.provisionedAt) > s.cfg.ScheduleTimeout:
		s.giveUp(ctx, w.pod, now, fmt.Sprintf("not scheduled within %v of provisioning", s.cfg.ScheduleTimeout))
		return false
	case node == nil:
		s.giveUp(ctx, w.pod, now, "this node is not registered with the API server")
		return false
	case len(w.foreign) > 0:
		s.giveUp(ctx, w.pod, now, fmt.Sprintf("this node does not offer %v", w.foreign))
		return false
	}
	if ok, why := nodeAdmits(w.pod, node); !ok {
		s.giveUp(ctx, w.pod, now, "the scheduler would not place it here: "+why)
		return false
	}
	made, err := s.serve(ctx, p, w.pod, w.need)
	if err != nil {
		s.giveUp(ctx, w.pod, now, err.Error())
		return true
	}
	if made > 0 || c.provisionedAt.IsZero() {
		s.provisioned(ctx, w.pod, w.need, made, now)
	}
	return false
}

// tryClaim claims an unclaimed pod, or one whose claim went stale, if this
// node can serve it, and then serves it. It reports whether the pod waits for
// room this node could give it later: the node admits it and offers every
// profile it asks for, but has no room for them now.
func (s *Source) tryClaim(ctx context.Context, p *pass, w wanted, node *corev1.Node, now time.Time) bool {
	log := s.log.WithFields(logrus.Fields{"pod": podKey(w.pod), "want": w.need.String()})
	if s.backingOff(w.pod, now) || len(w.foreign) > 0 {
		return false
	}
	if nn := w.pod.Status.NominatedNodeName; nn != "" && nn != s.cfg.NodeName {
		// The scheduler is preempting pods on that node to make room.
		log.WithField("nominated", nn).Debug("not claiming: the pod is nominated to another node")
		return false
	}
	if ok, why := nodeAdmits(w.pod, node); !ok {
		log.WithField("reason", why).Debug("not claiming")
		return false
	}
	stale := ""
	if w.claim.by != "" {
		if stale = w.claim.expired(now, s.cfg.ClaimTimeout, s.cfg.ScheduleTimeout); stale == "" {
			stale = s.nodeGone(ctx, w.claim.by, p.nodes)
		}
		if stale == "" {
			return false // another node serves it
		}
	}
	for _, prof := range w.need.Profiles() {
		if s.spare(p, prof) >= w.need[prof] {
			continue
		}
		if !s.cfg.Provisioner.CanFit(prof, w.need[prof], p.keep) {
			log.WithField("profile", prof).Debug("not claiming: no room for the profile")
			return true
		}
	}
	claimed, err := s.claimPod(ctx, w.pod, now)
	if err != nil {
		if apierrors.IsConflict(err) {
			log.Debug("another node claimed the pod first")
		} else {
			log.WithError(err).Warn("claim pod")
		}
		return false
	}
	s.remember(w.pod, claimed)
	if stale != "" {
		log = log.WithField("previous", w.claim.by)
		log.WithField("reason", stale).Info("took over a stale claim")
	}
	log.Info("claimed pod")
	s.event(claimed, corev1.EventTypeNormal, ReasonClaimed, "node %s claimed the pod to provision %s", s.cfg.NodeName, w.need)
	made, err := s.serve(ctx, p, claimed, w.need)
	if err != nil {
		s.giveUp(ctx, claimed, now, err.Error())
		return true
	}
	s.provisioned(ctx, claimed, w.need, made, now)
	return false
}

// serve reserves spare idle instances for the pod's need and provisions the
// rest. It returns how many instances it made. On failure the pod's
// reservations are returned to the pass (instances made stay idle, spare for
// the next pod).
func (s *Source) serve(ctx context.Context, p *pass, pod *corev1.Pod, need Need) (int, error) {
	taken := Reserved{}
	made := 0
	for _, prof := range need.Profiles() {
		want := need[prof]
		use := min(want, max(s.spare(p, prof), 0))
		p.keep[prof] += use
		taken[prof] += use
		for taken[prof] < want {
			if err := s.cfg.Provisioner.Provision(ctx, prof, p.keep); err != nil {
				for pr, n := range taken {
					p.keep[pr] -= n
				}
				return made, fmt.Errorf("provision %s (%d of %d): %w", prof, taken[prof]+1, want, err)
			}
			p.avail[prof]++
			p.keep[prof]++
			taken[prof]++
			made++
			s.log.WithFields(logrus.Fields{"pod": podKey(pod), "profile": prof}).Info("provisioned an instance for a pending pod")
		}
	}
	return made, nil
}

func (s *Source) provisioned(ctx context.Context, pod *corev1.Pod, need Need, made int, now time.Time) {
	out, err := s.markProvisioned(ctx, pod, now)
	if err != nil {
		// Not fatal: the next pass serves the claim again and retries.
		s.log.WithError(err).WithField("pod", podKey(pod)).Warn("record provisioned")
		return
	}
	s.remember(pod, out)
	s.event(out, corev1.EventTypeNormal, ReasonProvisioned, "node %s has %s ready (%d made now)", s.cfg.NodeName, need, made)
}

// giveUp removes this node's claim and leaves the pod alone for Backoff.
func (s *Source) giveUp(ctx context.Context, pod *corev1.Pod, now time.Time, reason string) {
	log := s.log.WithFields(logrus.Fields{"pod": podKey(pod), "reason": reason})
	out, err := s.unclaimPod(ctx, pod)
	if err != nil {
		log.WithError(err).Warn("give up claim")
		return
	}
	s.remember(pod, out)
	s.backOff(pod, now.Add(s.cfg.Backoff))
	log.Warn("gave up claim")
	s.event(out, corev1.EventTypeWarning, ReasonReleased, "node %s gave up its claim: %s", s.cfg.NodeName, reason)
}
