package nodeviewtest

import (
	"context"
	"sync"

	authv1 "k8s.io/api/authentication/v1"

	"github.com/migpro/migpro/nodeview"
)

// Reviewer answers token reviews from a table: a known token is
// authenticated for nodeview.Audience as its user; any other is not.
type Reviewer struct {
	mu    sync.Mutex
	users map[string]authv1.UserInfo
	Err   error // when set, every review fails with it
}

var _ nodeview.Reviewer = (*Reviewer)(nil)

// New returns a reviewer that knows no token.
func New() *Reviewer { return &Reviewer{users: map[string]authv1.UserInfo{}} }

// Agent makes token a token of user bound to node (empty: bound to no
// node).
func (r *Reviewer) Agent(token, user, node string) {
	u := authv1.UserInfo{Username: user}
	if node != "" {
		u.Extra = map[string]authv1.ExtraValue{nodeview.NodeNameKey: {node}}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.users[token] = u
}

// Forget makes token unknown, as the API server does once a token's pod or
// ServiceAccount is deleted.
func (r *Reviewer) Forget(token string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.users, token)
}

// Review looks token up.
func (r *Reviewer) Review(_ context.Context, token string) (authv1.TokenReviewStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Err != nil {
		return authv1.TokenReviewStatus{}, r.Err
	}
	u, ok := r.users[token]
	if !ok {
		return authv1.TokenReviewStatus{Error: "unknown token"}, nil
	}
	return authv1.TokenReviewStatus{Authenticated: true, User: u, Audiences: []string{nodeview.Audience}}, nil
}
