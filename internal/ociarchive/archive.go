package ociarchive

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/migpro/migpro/internal/atomicfile"
)

// NameAnnotation is the index annotation containerd names an imported image
// by.
const NameAnnotation = "io.containerd.image.name"

// Spec describes a one-layer image made from a directory.
type Spec struct {
	// Name is the full reference, e.g. "ghcr.io/migpro/migpro-agent:v0.3.0".
	Name string
	// Rootfs is the directory packed as the only layer: regular files,
	// directories and symlinks, owned by root, with their modes.
	Rootfs     string
	Entrypoint []string
	Cmd        []string
	Env        []string
	// User is the image's default user, e.g. "65532:65532" (empty: root).
	User string
}

// Result is what Write wrote.
type Result struct {
	// Manifest is the image manifest's digest, the image's identity.
	Manifest digest.Digest
	// LayerBytes is the uncompressed size of the layer.
	LayerBytes int64
}

// epoch is every entry's time, so that archives are reproducible.
var epoch = time.Unix(0, 0).UTC()

// Write writes img as an OCI image-layout tar to path (atomically), with the
// io.containerd.image.name annotation that containerd needs and the OCI ref
// name (the tag) that podman uses.
func Write(path string, img Spec) (Result, error) {
	i := strings.LastIndex(img.Name, ":")
	if i < 0 || strings.Contains(img.Name[i:], "/") {
		return Result{}, fmt.Errorf("image name %q has no tag", img.Name)
	}
	layer, err := tarDir(img.Rootfs)
	if err != nil {
		return Result{}, fmt.Errorf("pack layer from %s: %w", img.Rootfs, err)
	}
	platform := ocispec.Platform{Architecture: runtime.GOARCH, OS: "linux"}
	layerDesc := blobDesc(ocispec.MediaTypeImageLayer, layer)
	cfg, err := json.Marshal(ocispec.Image{
		Created:  &epoch,
		Platform: platform,
		Config:   ocispec.ImageConfig{Entrypoint: img.Entrypoint, Cmd: img.Cmd, Env: img.Env, User: img.User},
		RootFS:   ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{layerDesc.Digest}},
	})
	if err != nil {
		return Result{}, err
	}
	cfgDesc := blobDesc(ocispec.MediaTypeImageConfig, cfg)
	manifest, err := json.Marshal(ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    cfgDesc,
		Layers:    []ocispec.Descriptor{layerDesc},
	})
	if err != nil {
		return Result{}, err
	}
	mDesc := blobDesc(ocispec.MediaTypeImageManifest, manifest)
	mDesc.Annotations = map[string]string{NameAnnotation: img.Name, ocispec.AnnotationRefName: img.Name[i+1:]}
	mDesc.Platform = &platform
	index, err := json.Marshal(ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{mDesc},
	})
	if err != nil {
		return Result{}, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		data []byte
	}{
		{ocispec.ImageLayoutFile, []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", index},
		{blobPath(cfgDesc), cfg},
		{blobPath(layerDesc), layer},
		{blobPath(mDesc), manifest},
	} {
		h := &tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data)), Typeflag: tar.TypeReg, ModTime: epoch}
		if err := tw.WriteHeader(h); err != nil {
			return Result{}, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return Result{}, err
		}
	}
	if err := tw.Close(); err != nil {
		return Result{}, err
	}
	if err := atomicfile.WriteFile(path, buf.Bytes(), 0o644, atomicfile.Options{}); err != nil {
		return Result{}, fmt.Errorf("write %s: %w", path, err)
	}
	return Result{Manifest: mDesc.Digest, LayerBytes: int64(len(layer))}, nil
}

func blobDesc(mediaType string, b []byte) ocispec.Descriptor {
	sum := sha256.Sum256(b)
	return ocispec.Descriptor{MediaType: mediaType, Size: int64(len(b)),
		Digest: digest.NewDigestFromEncoded(digest.SHA256, hex.EncodeToString(sum[:]))}
}

func blobPath(d ocispec.Descriptor) string { return "blobs/sha256/" + d.Digest.Encoded() }

// tarDir packs dir (regular files, directories, symlinks; WalkDir's lexical
// order) as an uncompressed layer owned by root, every entry at the epoch.
func tarDir(dir string) ([]byte, error) {
	// File contents are read through a root scoped to dir, so a path swapped
	// for a symlink during the walk cannot lead outside it.
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		} else if !info.Mode().IsRegular() && !info.IsDir() {
			return nil // devices, sockets: not part of an image
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		h.Name, h.Uid, h.Gid, h.Uname, h.Gname = filepath.ToSlash(rel), 0, 0, "", ""
		h.ModTime, h.AccessTime, h.ChangeTime = epoch, time.Time{}, time.Time{}
		if info.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			f, err := root.Open(rel)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(tw, f)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Close writes the archive's end blocks: take the bytes after it.
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
