package nodeview

import (
	"context"
	"crypto/sha256"
	"sync"
	"time"

	authv1 "k8s.io/api/authentication/v1"
)

// DefaultReviewTTL is how long migpro-admission trusts an authenticated
// review of an agent's token (--view-review-ttl). A token the API server
// stops accepting (its pod deleted, its ServiceAccount removed) is refused
// at most this long after.
const DefaultReviewTTL = 10 * time.Second

// maxCachedReviews bounds the cache: about one token per node agent.
const maxCachedReviews = 4096

// CachedReviewer remembers, for TTL, each authenticated answer of Reviewer:
// an agent's reads then cost one TokenReview per TTL rather than one per
// read. Only authenticated answers are kept; a refusal or a failed review
// is asked again on the next read. Tokens are held only as their SHA-256.
type CachedReviewer struct {
	Reviewer Reviewer
	TTL      time.Duration
	Now      func() time.Time // the clock; nil is time.Now

	mu   sync.Mutex
	seen map[[sha256.Size]byte]cachedReview
}

type cachedReview struct {
	status authv1.TokenReviewStatus
	until  time.Time
}

// NewCachedReviewer caches r's authenticated answers for ttl; a ttl of 0
// or less returns r itself.
func NewCachedReviewer(r Reviewer, ttl time.Duration) Reviewer {
	if ttl <= 0 {
		return r
	}
	return &CachedReviewer{Reviewer: r, TTL: ttl}
}

// Review answers from the cache while an authenticated answer for token is
// younger than TTL, else asks Reviewer.
func (c *CachedReviewer) Review(ctx context.Context, token string) (authv1.TokenReviewStatus, error) {
	key := sha256.Sum256([]byte(token))
	now := time.Now()
	if c.Now != nil {
		now = c.Now()
	}
	c.mu.Lock()
	hit, ok := c.seen[key]
	c.mu.Unlock()
	if ok && now.Before(hit.until) {
		return hit.status, nil
	}
	st, err := c.Reviewer.Review(ctx, token)
	if err != nil || !st.Authenticated {
		return st, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[[sha256.Size]byte]cachedReview{}
	}
	if len(c.seen) >= maxCachedReviews {
		for k, v := range c.seen {
			if !now.Before(v.until) {
				delete(c.seen, k)
			}
		}
	}
	if len(c.seen) < maxCachedReviews {
		c.seen[key] = cachedReview{status: st, until: now.Add(c.TTL)}
	}
	return st, nil
}
