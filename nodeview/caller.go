package nodeview

import (
	"context"
	"fmt"
	"slices"

	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedauthv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
)

// Audience is the audience of the token an agent shows the view: a token
// for the API server is refused, so the view never holds one it could use
// as the agent elsewhere.
const Audience = "migpro-node-view"

// NodeNameKey is the user info extra in which the API server names the
// node a ServiceAccount token is bound to (through its pod or the node).
const NodeNameKey = "authentication.kubernetes.io/node-name"

// Reviewer checks a bearer token: the TokenReview's status, or an error
// when the review could not be made.
type Reviewer interface {
	Review(ctx context.Context, token string) (authv1.TokenReviewStatus, error)
}

// TokenReviewer reviews tokens with the API server (authentication.k8s.io/v1
// TokenReview), for Audience.
type TokenReviewer struct {
	Reviews typedauthv1.TokenReviewInterface
}

// Review asks the API server who holds token.
func (r TokenReviewer) Review(ctx context.Context, token string) (authv1.TokenReviewStatus, error) {
	out, err := r.Reviews.Create(ctx, &authv1.TokenReview{Spec: authv1.TokenReviewSpec{Token: token, Audiences: []string{Audience}}},
		metav1.CreateOptions{})
	if err != nil {
		return authv1.TokenReviewStatus{}, fmt.Errorf("token review: %w", err)
	}
	return out.Status, nil
}

// callerNode is the node of an authenticated agent: the status must be
// authenticated for Audience, as user, with exactly one node name.
func callerNode(st authv1.TokenReviewStatus, user string) (string, error) {
	switch {
	case !st.Authenticated:
		msg := "the token is not valid for " + Audience
		if st.Error != "" {
			msg += ": " + st.Error
		}
		return "", errUnauthorized(msg)
	case len(st.Audiences) > 0 && !slices.Contains(st.Audiences, Audience):
		return "", errUnauthorized("the token's audiences " + fmt.Sprint(st.Audiences) + " do not include " + Audience)
	case st.User.Username != user:
		return "", errForbidden(fmt.Sprintf("user %q is not the node agent (%s); the node view serves only it", st.User.Username, user))
	}
	nodes := st.User.Extra[NodeNameKey]
	if len(nodes) != 1 || nodes[0] == "" {
		return "", errForbidden("the token names no node (" + NodeNameKey + "); the agent's token must be bound to its pod or node")
	}
	return nodes[0], nil
}
