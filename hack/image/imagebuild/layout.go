package imagebuild

import (
	"errors"
	"fmt"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// refNameAnnotation names a manifest in an OCI layout's index.json (the tag
// it is meant to be pushed as), as `skopeo` and `oras` read it.
const refNameAnnotation = "org.opencontainers.image.ref.name"

// WriteLayout replaces dir with an OCI image layout holding one image or
// image index (an Image or an ImageIndex), named ref.
func WriteLayout(dir string, artifact partial.Describable, ref string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("writing the OCI layout %s: %w", dir, err)
	}
	opt := layout.WithAnnotations(map[string]string{refNameAnnotation: ref})
	switch a := artifact.(type) {
	case v1.ImageIndex:
		err = p.AppendIndex(a, opt)
	case v1.Image:
		err = p.AppendImage(a, opt)
	default:
		err = fmt.Errorf("%T is neither an image nor an index", artifact)
	}
	if err != nil {
		return fmt.Errorf("writing the OCI layout %s: %w", dir, err)
	}
	return nil
}

// Artifact is the one image or image index of an OCI layout written by
// WriteLayout, with its descriptor.
type Artifact struct {
	Descriptor v1.Descriptor
	Image      v1.Image
	Index      v1.ImageIndex
}

// ReadLayout opens the image or index of the OCI layout dir.
func ReadLayout(dir string) (Artifact, error) {
	root, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return Artifact{}, fmt.Errorf("reading the OCI layout %s (build it first): %w", dir, err)
	}
	m, err := root.IndexManifest()
	if err != nil {
		return Artifact{}, fmt.Errorf("reading the OCI layout %s: %w", dir, err)
	}
	if len(m.Manifests) != 1 {
		return Artifact{}, fmt.Errorf("the OCI layout %s holds %d manifests, want 1", dir, len(m.Manifests))
	}
	a := Artifact{Descriptor: m.Manifests[0]}
	switch a.Descriptor.MediaType {
	case types.OCIImageIndex, types.DockerManifestList:
		a.Index, err = root.ImageIndex(a.Descriptor.Digest)
	case types.OCIManifestSchema1, types.DockerManifestSchema2:
		a.Image, err = root.Image(a.Descriptor.Digest)
	default:
		err = errors.New("unknown media type " + string(a.Descriptor.MediaType))
	}
	if err != nil {
		return Artifact{}, fmt.Errorf("reading the OCI layout %s: %w", dir, err)
	}
	return a, nil
}
