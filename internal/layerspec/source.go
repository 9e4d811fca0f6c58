package layerspec

import (
	"context"
	"fmt"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// SourceKind normalises spec.source.kind: empty means GitRepository, and
// the resource.group spellings Kraan used mean their kinds.
func SourceKind(kind string) string {
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

// SourceNamespace is the namespace of a layer's source; defaultNamespace
// (the operator's --default-source-namespace, Kraan's RUNTIME_NAMESPACE)
// when spec.source.namespace is empty.
func SourceNamespace(layer *kraanv1.AddonsLayer, defaultNamespace string) string {
	if layer.Spec.Source.Namespace != "" {
		return layer.Spec.Source.Namespace
	}
	return defaultNamespace
}

// SourceKey names a layer's source, "GitRepository/flux-system/addons".
func SourceKey(layer *kraanv1.AddonsLayer, defaultNamespace string) string {
	return IndexKey(SourceKind(layer.Spec.Source.Kind), SourceNamespace(layer, defaultNamespace), layer.Spec.Source.Name)
}

// IndexKey names a source by kind, namespace and name, as SourceKey does.
func IndexKey(kind, namespace, name string) string {
	return kind + "/" + namespace + "/" + name
}

// NewSourceObject returns an empty object of a source kind.
func NewSourceObject(kind string) (client.Object, error) {
	switch SourceKind(kind) {
	case kraanv1.GitRepositoryKind:
		return &sourcev1.GitRepository{}, nil
	case kraanv1.OCIRepositoryKind:
		return &sourcev1.OCIRepository{}, nil
	case kraanv1.BucketKind:
		return &sourcev1.Bucket{}, nil
	}
	return nil, fmt.Errorf("unsupported source kind %q", kind)
}

// sourceNotFound says a layer's source does not exist. A layer that leaves
// source.namespace empty, as Kraan's often do, reads the operator's default
// source namespace: Kraan read its own RUNTIME_NAMESPACE instead (gotk-system
// with Kraan's chart), so the message says how to point the operator there.
func sourceNotFound(layer *kraanv1.AddonsLayer, key, namespace string) string {
	msg := fmt.Sprintf("layer source: %s not found", key)
	if layer.Spec.Source.Namespace == "" {
		msg += fmt.Sprintf("; spec.source.namespace is empty, so the operator reads its default source namespace %q: "+
			"set spec.source.namespace, or the operator's --default-source-namespace (the settings ConfigMap's "+
			"default-source-namespace key, or KRAAN_DEFAULT_SOURCE_NAMESPACE) to where the source is — for a layer "+
			"Kraan applied, Kraan's namespace (gotk-system by default)", namespace)
	}
	return msg
}

// Observation is what a Flux source reports about its artifact.
type Observation struct {
	// Artifact is set only when the source is Ready for its current generation.
	Artifact *fluxmeta.Artifact
	// Message says why there is no usable artifact.
	Message string
}

// ObserveSource reads a layer's source with reader and reports its artifact
// when the source is Ready for its current generation: source-controller
// keeps the last good artifact when a new spec fails, and Kraan #138
// deployed it. A source that does not exist is an observation, not an
// error; an error is a failed read.
func ObserveSource(ctx context.Context, reader client.Reader, layer *kraanv1.AddonsLayer, defaultNamespace string) (Observation, error) {
	key := SourceKey(layer, defaultNamespace)
	src, err := NewSourceObject(layer.Spec.Source.Kind)
	if err != nil {
		return Observation{}, err
	}
	nsName := types.NamespacedName{Namespace: SourceNamespace(layer, defaultNamespace), Name: layer.Spec.Source.Name}
	if err := reader.Get(ctx, nsName, src); err != nil {
		if apierrors.IsNotFound(err) {
			return Observation{Message: sourceNotFound(layer, key, nsName.Namespace)}, nil
		}
		return Observation{}, fmt.Errorf("reading source %s: %w", key, err)
	}
	observed, artifact, conds := sourceStatus(src)
	ready := apimeta.FindStatusCondition(conds, kraanv1.ReadyCondition)
	switch {
	case observed != src.GetGeneration():
		return Observation{Message: fmt.Sprintf("layer source: %s not ready, generation %d not yet reconciled", key, src.GetGeneration())}, nil
	case ready == nil || ready.Status != metav1.ConditionTrue || artifact == nil:
		return Observation{Message: fmt.Sprintf("layer source: %s not ready, source state: %s", key, conditionMessage(ready))}, nil
	}
	return Observation{Artifact: artifact}, nil
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
