package imagebuild

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/opencontainers/go-digest"

	"github.com/migpro/migpro/internal/ociarchive"
)

// Sources says where Build finds its inputs.
type Sources struct {
	// BinDir holds the binaries `make build` writes.
	BinDir string
	// Busybox is a static busybox binary.
	Busybox string
}

// Built is one image written by Build.
type Built struct {
	Name     string // the full reference, repository/name:tag
	Path     string // the archive
	Manifest digest.Digest
	// ArchiveBytes is the archive's size; LayerBytes the unpacked content.
	ArchiveBytes, LayerBytes int64
}

// ArchiveName is the file name of an image's archive for a tag.
func ArchiveName(image, tag string) string { return image + "-" + tag + ".tar" }

// Build writes every image of Images as an OCI archive in outDir, named
// ArchiveName, with the reference repo/name:tag.
func Build(src Sources, outDir, repo, tag string) ([]Built, error) {
	if tag == "" || tag == "latest" {
		return nil, fmt.Errorf("image tag %q: give a version (make image tags from git describe)", tag)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, err
	}
	var out []Built
	for _, img := range Images() {
		b, err := buildOne(src, img, outDir, repo, tag)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", img.Name, err)
		}
		out = append(out, b)
	}
	return out, nil
}

func buildOne(src Sources, img Image, outDir, repo, tag string) (Built, error) {
	root, err := os.MkdirTemp("", "migpro-image-")
	if err != nil {
		return Built{}, err
	}
	defer os.RemoveAll(root)
	if err := Assemble(src, img, root); err != nil {
		return Built{}, err
	}
	ref := repo + "/" + img.Name + ":" + tag
	path := filepath.Join(outDir, ArchiveName(img.Name, tag))
	res, err := ociarchive.Write(path, ociarchive.Spec{Name: ref, Rootfs: root, Entrypoint: img.Entrypoint,
		Env: []string{"PATH=/usr/local/bin:/bin"}, User: img.User})
	if err != nil {
		return Built{}, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return Built{}, err
	}
	return Built{Name: ref, Path: path, Manifest: res.Manifest, ArchiveBytes: fi.Size(), LayerBytes: res.LayerBytes}, nil
}

// Assemble fills root with img's files, the libraries its programs need,
// its busybox applets and a world-writable /tmp.
func Assemble(src Sources, img Image, root string) error {
	var programs []string
	for _, f := range img.Files {
		from := filepath.Join(src.BinDir, f.Src)
		if f.Src == Busybox {
			from = src.Busybox
		}
		if err := copyFile(from, filepath.Join(root, f.Dest)); err != nil {
			return err
		}
		if f.Exec {
			programs = append(programs, from)
		}
	}
	deps, err := ELFDeps(programs...)
	if err != nil {
		return err
	}
	for _, d := range deps {
		if err := copyFile(d.Src, filepath.Join(root, d.Dest)); err != nil {
			return err
		}
	}
	for _, a := range img.Applets {
		if err := os.Symlink("busybox", filepath.Join(root, "bin", a)); err != nil {
			return err
		}
	}
	tmp := filepath.Join(root, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	return os.Chmod(tmp, os.ModeSticky|0o777)
}

// copyFile copies src's content (following symlinks) to dst with src's
// permission bits, creating dst's directories.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("%w (run make build first)", err)
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Close()
}
