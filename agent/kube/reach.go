package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// reachEvery is how often the link asks the API server for its node, to
// know whether the server answers: the agent is not ready while it does not
// (pods would get instances it cannot label, claim or readmit).
var reachEvery = 5 * time.Second

// Ready says why the API server is out of reach, or nil while it answers
// (agent.ReadyCluster). An answer that refuses (forbidden, not found) is
// still an answer.
func (l *link) Ready() error {
	if p := l.reach.Load(); p != nil {
		return *p
	}
	return nil
}

// watchReach asks the API server for this node every reachEvery until ctx
// ends, and logs once when it stops answering and once when it answers
// again.
func (l *link) watchReach(ctx context.Context) error {
	// Read once: the period is fixed for the life of the watch.
	every := reachEvery
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		l.probe(ctx, every)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (l *link) probe(ctx context.Context, timeout time.Duration) {
	c, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := l.cs.CoreV1().Nodes().Get(c, l.node, metav1.GetOptions{})
	if ctx.Err() != nil {
		return
	}
	was := l.Ready()
	if err == nil || answered(err) {
		l.reach.Store(nil)
		if was != nil {
			l.log.Info("API server answers again: ready")
		}
		return
	}
	e := fmt.Errorf("unreachable: %w", err)
	l.reach.Store(&e)
	if was == nil {
		l.log.WithError(err).Warn("API server unreachable: not ready until it answers")
	}
}

// answered reports whether err came from the API server itself (a status
// such as forbidden or not found) rather than from the way to it (dial,
// TLS, timeout).
func answered(err error) bool {
	var st apierrors.APIStatus
	return errors.As(err, &st) && !apierrors.IsTimeout(err) && !apierrors.IsServerTimeout(err) && !apierrors.IsServiceUnavailable(err)
}
