// Package cdispec renders, without writing to any CDI directory, what the
// agent's CDI code would write for this node: the driver's common edits that
// nvcdi finds under a driver root, and a full spec for each MIG instance that
// exists (`migpro-lab cdi-spec`). It is apart from doctor so that migctl,
// which links doctor, does not link the cdi package and NVIDIA's container
// toolkit.
package cdispec
