// Package imagebuild assembles migpro's two container images from the
// binaries `make build` writes: migpro-agent (the agent, the hook, the shim,
// migctl, a static busybox for the chart's init container, and the C
// libraries the cgo binaries load) and migpro-admission (the webhook server,
// run as a non-root user). Layout is the one list of what each image holds;
// the Containerfile at the repository root must produce the same, and a test
// keeps the two equal.
package imagebuild
