package nodeview_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	authv1 "k8s.io/api/authentication/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/migpro/migpro/nodeview"
	"github.com/migpro/migpro/nodeview/nodeviewtest"
)

// counting counts the reviews that reach the API server's stand-in.
type counting struct {
	nodeview.Reviewer
	n atomic.Int32
}

func (c *counting) Review(ctx context.Context, token string) (authv1.TokenReviewStatus, error) {
	c.n.Add(1)
	return c.Reviewer.Review(ctx, token)
}

// An agent's reads within the TTL cost one TokenReview; once it is past, the
// token is reviewed again, and a token the API server no longer accepts is
// refused. A refused token is never remembered.
func TestViewReviewsATokenOncePerTTL(t *testing.T) {
	rv := nodeviewtest.New()
	rv.Agent("a", agentUser, "gpu-a")
	api := &counting{Reviewer: rv}
	now := time.Date(2026, 11, 27, 18, 0, 0, 0, time.UTC)
	cached := &nodeview.CachedReviewer{Reviewer: api, TTL: 10 * time.Second, Now: func() time.Time { return now }}
	srv, err := nodeview.New(fake.NewClientset(pod("p1", "gpu-a", true)), cached, agentUser, nodeview.WithLogger(logrus.New()))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	get := func(token string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, ts.URL+"/api/v1/namespaces/tenant/pods/p1", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	step := func(what, token string, code int, reviews int32) {
		t.Helper()
		if got := get(token); got != code {
			t.Errorf("%s: HTTP %d, want %d", what, got, code)
		}
		if got := api.n.Load(); got != reviews {
			t.Errorf("%s: %d token reviews so far, want %d", what, got, reviews)
		}
	}
	step("first read", "a", http.StatusOK, 1)
	step("second read", "a", http.StatusOK, 1)
	now = now.Add(9 * time.Second)
	step("read within the TTL", "a", http.StatusOK, 1)
	now = now.Add(2 * time.Second)
	step("read past the TTL", "a", http.StatusOK, 2)
	rv.Forget("a")
	step("revoked, within the TTL", "a", http.StatusOK, 2)
	now = now.Add(11 * time.Second)
	step("revoked, past the TTL", "a", http.StatusUnauthorized, 3)
	step("refused again", "a", http.StatusUnauthorized, 4)
}

// A TTL of zero turns the cache off: every read is reviewed.
func TestNoReviewCacheWithoutATTL(t *testing.T) {
	rv := nodeviewtest.New()
	rv.Agent("a", agentUser, "gpu-a")
	api := &counting{Reviewer: rv}
	r := nodeview.NewCachedReviewer(api, 0)
	for range 3 {
		if st, err := r.Review(context.Background(), "a"); err != nil || !st.Authenticated {
			t.Fatalf("review: %+v, %v", st, err)
		}
	}
	if got := api.n.Load(); got != 3 {
		t.Errorf("%d reviews for 3 reads with no TTL, want 3", got)
	}
}
