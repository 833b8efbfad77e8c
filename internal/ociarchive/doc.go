// Package ociarchive writes a one-layer container image as an OCI
// image-layout tar archive, the format `ctr images import`, `podman load` and
// containerd's Go client read. The archives are reproducible: the same
// directory gives the same bytes, so the same digests.
package ociarchive
