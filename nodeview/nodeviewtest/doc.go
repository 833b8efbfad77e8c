// Package nodeviewtest is a fake token reviewer for tests of the node view:
// tokens map to user infos given by the test, in place of the API server's
// TokenReview.
package nodeviewtest
