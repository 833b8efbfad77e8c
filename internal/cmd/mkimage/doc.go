// Command mkimage writes migpro's container images as OCI archives (see
// internal/imagebuild). `make image` runs it; it is not installed.
package main
