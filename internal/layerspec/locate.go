package layerspec

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/source"
)

// Location is a layer's directory in its source's current artifact,
// fetched into a store.
type Location struct {
	// Revision is the artifact's revision.
	Revision string
	// Root is where the artifact is extracted; Dir the layer's directory in it.
	Root, Dir string
	// Warnings say what the user may miss in the directory (links skipped).
	Warnings []string
}

// NotReadyError: the source has no artifact to use yet (it does not exist,
// is not Ready, or has not reconciled its current generation).
type NotReadyError struct{ Message string }

func (e *NotReadyError) Error() string { return e.Message }

// FetchError: the artifact could not be fetched into the store.
type FetchError struct{ Err error }

func (e *FetchError) Error() string { return e.Err.Error() }
func (e *FetchError) Unwrap() error { return e.Err }

// Unusable reports whether the fetch failed on the artifact's own content:
// an entry that would escape the store, a size limit, an invalid digest or
// URL. Such an artifact fails the same way however often it is fetched, so
// only a new one from the source helps; retrying would only download it
// again. A digest mismatch is not among them: source-controller may be
// replacing the file, and it rebuilds a corrupted one on its next reconcile.
func (e *FetchError) Unusable() bool {
	var unsafe *source.UnsafeArchiveError
	var tooLarge *source.TooLargeError
	return errors.As(e.Err, &unsafe) || errors.As(e.Err, &tooLarge) || errors.Is(e.Err, source.ErrInvalidArtifact)
}

// StoreError: the fetched artifact could not be read back from the store.
type StoreError struct{ Err error }

func (e *StoreError) Error() string { return e.Err.Error() }
func (e *StoreError) Unwrap() error { return e.Err }

// PathError: the artifact has no directory at spec.source.path.
type PathError struct{ Message string }

func (e *PathError) Error() string { return e.Message }

// Locate finds the layer's directory: it observes the source with reader,
// fetches its artifact into store (verified, extracted, kept by digest; one
// download serves every layer on the same revision) and resolves
// spec.source.path in it. Its errors are a *NotReadyError, *FetchError,
// *StoreError or *PathError, or the source's failed read.
func Locate(ctx context.Context, reader client.Reader, store *source.Store, layer *kraanv1.AddonsLayer, defaultNamespace string) (*Location, error) {
	obs, err := ObserveSource(ctx, reader, layer, defaultNamespace)
	if err != nil {
		return nil, err
	}
	if obs.Artifact == nil {
		return nil, &NotReadyError{Message: obs.Message}
	}
	art := source.FromFlux(obs.Artifact)
	root, err := store.Fetch(ctx, art)
	if err != nil {
		return nil, &FetchError{Err: err}
	}
	skipped, err := store.SkippedLinks(art)
	if err != nil {
		return nil, &StoreError{Err: err}
	}
	links := skippedLinksIn(skipped, layer.Spec.Source.Path)
	dir, err := source.ResolvePath(root, layer.Spec.Source.Path)
	if err != nil {
		var notFound *source.PathNotFoundError
		if errors.As(err, &notFound) {
			notFound.Revision = art.Revision
		}
		msg := err.Error() + ": check spec.source.path"
		if links.pathIsLink {
			msg += " (it is a symbolic link in the artifact, and links are skipped)"
		}
		return nil, &PathError{Message: msg}
	}
	loc := &Location{Revision: art.Revision, Root: root, Dir: dir}
	if links.warning != "" {
		loc.Warnings = append(loc.Warnings, links.warning)
	}
	return loc, nil
}

// layerLinks is what the links skipped from an artifact mean to one layer.
type layerLinks struct {
	// warning names the skipped links inside the layer's directory.
	warning string
	// pathIsLink is true when the layer's path, or a directory above it, was a link.
	pathIsLink bool
}

// skippedLinksIn relates the links skipped when the artifact was extracted
// to the layer's path: a file the user expects may be missing because of one.
func skippedLinksIn(skipped []string, layerPath string) layerLinks {
	p := path.Clean(strings.TrimPrefix(filepath.ToSlash(layerPath), "/"))
	var out layerLinks
	var inside []string
	for _, name := range skipped {
		name = path.Clean(name)
		switch {
		case p == "." || strings.HasPrefix(name, p+"/"):
			inside = append(inside, name)
		case name == p || strings.HasPrefix(p, name+"/"):
			out.pathIsLink = true
		}
	}
	if len(inside) > 0 {
		shown := inside[:min(len(inside), 3)]
		out.warning = fmt.Sprintf("%d symbolic links in the layer's directory were skipped, not followed: %s",
			len(inside), strings.Join(shown, ", "))
		if len(inside) > len(shown) {
			out.warning += ", …"
		}
	}
	return out
}
