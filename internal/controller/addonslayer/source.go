package addonslayer

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/source"
)

// sourceObservation is what a Flux source reports about its artifact.
type sourceObservation struct {
	// artifact is set only when the source is Ready for its current generation.
	artifact *fluxmeta.Artifact
	// message says why there is no usable artifact.
	message string
}

// sourceKind normalises spec.source.kind: empty means GitRepository, and
// the resource.group spellings Kraan used mean their kinds.
func sourceKind(kind string) string {
	switch kind {
	case "", kraanv1.KraanGitRepositoryKind:
		return kraanv1.GitRepositoryKind
	case kraanv1.KraanOCIRepositoryKind:
		return kraanv1.OCIRepositoryKind
	case kraanv1.KraanBucketKind:
		return kraanv1.BucketKind
	}
	return kind
}

// sourceNamespace is the namespace of a layer's source.
func (r *Reconciler) sourceNamespace(obj *kraanv1.AddonsLayer) string {
	if obj.Spec.Source.Namespace != "" {
		return obj.Spec.Source.Namespace
	}
	return r.Options.DefaultSourceNamespace
}

// sourceKey names a layer's source, "GitRepository/flux-system/addons"; it is
// the value of the source field index.
func (r *Reconciler) sourceKey(obj *kraanv1.AddonsLayer) string {
	return sourceIndexKey(sourceKind(obj.Spec.Source.Kind), r.sourceNamespace(obj), obj.Spec.Source.Name)
}

func sourceIndexKey(kind, namespace, name string) string {
	return kind + "/" + namespace + "/" + name
}

// newSourceObject returns an empty object of a source kind.
func newSourceObject(kind string) (client.Object, error) {
	switch sourceKind(kind) {
	case kraanv1.GitRepositoryKind:
		return &sourcev1.GitRepository{}, nil
	case kraanv1.OCIRepositoryKind:
		return &sourcev1.OCIRepository{}, nil
	case kraanv1.BucketKind:
		return &sourcev1.Bucket{}, nil
	}
	return nil, fmt.Errorf("unsupported source kind %q", kind)
}

// observeSource reads a layer's source with reader and reports its artifact
// when the source is Ready for its current generation: source-controller keeps
// the last good artifact when a new spec fails, and Kraan #138 deployed it.
func (r *Reconciler) observeSource(ctx context.Context, reader client.Reader, obj *kraanv1.AddonsLayer) (sourceObservation, error) {
	key := r.sourceKey(obj)
	src, err := newSourceObject(obj.Spec.Source.Kind)
	if err != nil {
		return sourceObservation{}, err
	}
	nsName := types.NamespacedName{Namespace: r.sourceNamespace(obj), Name: obj.Spec.Source.Name}
	if err := reader.Get(ctx, nsName, src); err != nil {
		if apierrors.IsNotFound(err) {
			return sourceObservation{message: fmt.Sprintf("layer source: %s not found", key)}, nil
		}
		return sourceObservation{}, fmt.Errorf("reading source %s: %w", key, err)
	}
	observed, artifact, conds := sourceStatus(src)
	ready := apimeta.FindStatusCondition(conds, kraanv1.ReadyCondition)
	switch {
	case observed != src.GetGeneration():
		return sourceObservation{message: fmt.Sprintf("layer source: %s not ready, generation %d not yet reconciled", key, src.GetGeneration())}, nil
	case ready == nil || ready.Status != metav1.ConditionTrue || artifact == nil:
		return sourceObservation{message: fmt.Sprintf("layer source: %s not ready, source state: %s", key, conditionMessage(ready))}, nil
	}
	return sourceObservation{artifact: artifact}, nil
}

// sourceStatus reads the status fields the layer needs from any source kind.
func sourceStatus(src client.Object) (int64, *fluxmeta.Artifact, []metav1.Condition) {
	switch s := src.(type) {
	case *sourcev1.GitRepository:
		return s.Status.ObservedGeneration, s.Status.Artifact, s.Status.Conditions
	case *sourcev1.OCIRepository:
		return s.Status.ObservedGeneration, s.Status.Artifact, s.Status.Conditions
	case *sourcev1.Bucket:
		return s.Status.ObservedGeneration, s.Status.Artifact, s.Status.Conditions
	}
	return 0, nil, nil
}

func conditionMessage(c *metav1.Condition) string {
	if c == nil {
		return "no Ready condition yet"
	}
	return fmt.Sprintf("%s: %s", c.Reason, c.Message)
}

// reconcileSource waits for the source's artifact, fetches it into the store
// (verified, extracted, kept by digest; one download serves every layer on the
// same revision) and finds the layer's directory in it.
func (r *Reconciler) reconcileSource(ctx context.Context, sc *layerScope) *halt {
	obs, err := r.observeSource(ctx, r.Client, sc.layer)
	if err != nil {
		return r.sourceFailed(sc, kraanv1.ReasonSourceNotReady, failed(kraanv1.ReasonSourceNotReady, err))
	}
	if obs.artifact == nil {
		h := &halt{state: kraanv1.PendingState, reason: kraanv1.ReasonSourceNotReady, message: obs.message,
			requeue: sc.layer.Spec.Interval.Duration}
		return r.sourceFailed(sc, kraanv1.ReasonSourceNotReady, h)
	}
	art := source.FromFlux(obs.artifact)
	root, err := r.Store.Fetch(ctx, art)
	if err != nil {
		if artifactUnusable(err) {
			return r.sourceFailed(sc, kraanv1.ReasonArtifactFailed, stalledFailure(kraanv1.ReasonArtifactFailed, err.Error()))
		}
		h := &halt{state: kraanv1.FailedState, reason: kraanv1.ReasonArtifactFailed, requeue: sc.layer.Spec.Interval.Duration,
			message: "AddonsLayer failed, " + err.Error()}
		return r.sourceFailed(sc, kraanv1.ReasonArtifactFailed, h)
	}
	skipped, err := r.Store.SkippedLinks(art)
	if err != nil {
		return r.sourceFailed(sc, kraanv1.ReasonArtifactFailed, failed(kraanv1.ReasonArtifactFailed, err))
	}
	links := skippedLinksIn(skipped, sc.layer.Spec.Source.Path)
	dir, err := source.ResolvePath(root, sc.layer.Spec.Source.Path)
	if err != nil {
		var notFound *source.PathNotFoundError
		if errors.As(err, &notFound) {
			notFound.Revision = art.Revision
		}
		msg := err.Error() + ": check spec.source.path"
		if links.pathIsLink {
			msg += " (it is a symbolic link in the artifact, and links are skipped)"
		}
		return r.sourceFailed(sc, kraanv1.ReasonPathNotFound, stalledFailure(kraanv1.ReasonPathNotFound, msg))
	}
	if links.warning != "" {
		sc.warnings = append(sc.warnings, links.warning)
	}
	sc.revision, sc.root, sc.dir = art.Revision, root, dir
	setLayerCondition(sc.layer, kraanv1.SourceReadyCondition, true, kraanv1.ReasonArtifactFetched, "fetched revision "+art.Revision)
	return nil
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

// artifactUnusable reports whether a fetch failed on the artifact's own
// content: an entry that would escape the store, a size limit, an invalid
// digest or URL. Such an artifact fails the same way however often it is
// fetched, so the layer is Stalled until its source publishes another one
// (which the source watch reports); retrying would only download it again.
// A digest mismatch is not among them: source-controller may be replacing
// the file, and it rebuilds a corrupted one on its next reconcile.
func artifactUnusable(err error) bool {
	var unsafe *source.UnsafeArchiveError
	var tooLarge *source.TooLargeError
	return errors.As(err, &unsafe) || errors.As(err, &tooLarge) || errors.Is(err, source.ErrInvalidArtifact)
}

// sourceFailed records h's message on SourceReady and returns h.
func (r *Reconciler) sourceFailed(sc *layerScope, reason string, h *halt) *halt {
	setLayerCondition(sc.layer, kraanv1.SourceReadyCondition, false, reason, h.message)
	return h
}
