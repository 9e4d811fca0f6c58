package plugin

import (
	"context"
	"fmt"
	"io"
	"strings"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/apply"
	"github.com/kraan-io/kraan-operator/internal/manifest"
	"github.com/kraan-io/kraan-operator/internal/releasespec"
)

// Helm's annotations on every object of a release.
const (
	helmReleaseNameAnnotation      = "meta.helm.sh/release-name"
	helmReleaseNamespaceAnnotation = "meta.helm.sh/release-namespace"
)

type traceOptions struct {
	*options
	sourceNamespace string
}

func newTraceCommand(o *options) *cobra.Command {
	t := &traceOptions{options: o}
	cmd := &cobra.Command{
		Use:   "trace KIND/NAME",
		Short: "Show which HelmRelease and layer manage an object, from which source and revision",
		Example: `  kubectl kraan trace -n platform deployment/ingress
  kubectl kraan trace helmrelease/shop -n apps`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return t.run(cmd.Context(), args[0])
		},
	}
	cmd.Flags().StringVar(&t.sourceNamespace, "default-source-namespace", "",
		"The namespace of a layer's source when spec.source.namespace is empty; by default the running operator's --default-source-namespace (or its namespace), flux-system when no operator is found.")
	return cmd
}

func (t *traceOptions) run(ctx context.Context, ref string) error {
	kind, name, ok := strings.Cut(ref, "/")
	if !ok || kind == "" || name == "" {
		return fmt.Errorf("%q is not KIND/NAME, e.g. deployment/ingress", ref)
	}
	s, err := t.connect()
	if err != nil {
		return err
	}
	obj, err := t.object(ctx, s, kind, name)
	if err != nil {
		return err
	}
	out := t.streams.Out
	fmt.Fprintf(out, "Object:       %s\n", apply.Describe(obj))
	layerName := obj.GetLabels()[manifest.LayerLabel]
	hr, err := releaseOf(ctx, s, obj)
	if err != nil {
		return err
	}
	if hr != nil {
		t.printRelease(ctx, out, s, hr)
		layerName = hr.Labels[manifest.LayerLabel]
	}
	if layerName == "" {
		if hr == nil {
			return fmt.Errorf("%s is not managed by kraan-operator: it has no %s label and no Helm release annotations", apply.Describe(obj), manifest.LayerLabel)
		}
		fmt.Fprintln(out, "Layer:        none (the HelmRelease was not applied by a layer)")
		return nil
	}
	return t.printLayer(ctx, out, s, layerName)
}

// object reads KIND/NAME, with kubectl's kind spellings (deploy, cm…).
func (t *traceOptions) object(ctx context.Context, s *session, kind, name string) (*unstructured.Unstructured, error) {
	mapper, err := t.config.ToRESTMapper()
	if err != nil {
		return nil, err
	}
	gvk, err := mapper.KindFor(schema.GroupVersionResource{Resource: strings.ToLower(kind)})
	if err != nil {
		return nil, fmt.Errorf("unknown kind %q: %w", kind, err)
	}
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	key := client.ObjectKey{Name: name}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		key.Namespace = s.namespace
	}
	if err := s.client.Get(ctx, key, obj); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, fmt.Errorf("%s %s not found: check the name and -n", gvk.Kind, strings.TrimPrefix(key.String(), "/"))
		}
		return nil, fmt.Errorf("reading %s %s: %w", gvk.Kind, key, err)
	}
	return obj, nil
}

// releaseOf is the HelmRelease that obj is, or whose Helm release obj
// belongs to; nil for neither.
func releaseOf(ctx context.Context, s *session, obj *unstructured.Unstructured) (*kraanv1.HelmRelease, error) {
	if obj.GroupVersionKind().Group == kraanv1.GroupVersion.Group && obj.GetKind() == releaseKind {
		hr := &kraanv1.HelmRelease{}
		return hr, s.client.Get(ctx, client.ObjectKeyFromObject(obj), hr)
	}
	name, ns := obj.GetAnnotations()[helmReleaseNameAnnotation], obj.GetAnnotations()[helmReleaseNamespaceAnnotation]
	if name == "" {
		return nil, nil
	}
	list := &kraanv1.HelmReleaseList{}
	if err := s.client.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing HelmReleases: %w", err)
	}
	for i := range list.Items {
		target := releasespec.TargetOf(&list.Items[i], "")
		if target.ReleaseName == name && target.StorageNamespace == ns {
			return &list.Items[i], nil
		}
	}
	return nil, fmt.Errorf("%s belongs to Helm release %s/%s, which no kraan.io HelmRelease manages", apply.Describe(obj), ns, name)
}

func (t *traceOptions) printRelease(ctx context.Context, out io.Writer, s *session, hr *kraanv1.HelmRelease) {
	st := releaseState(hr)
	fmt.Fprintf(out, "HelmRelease:  %s/%s %s\n", hr.Namespace, hr.Name, stateText(st, t.colored()))
	fmt.Fprintf(out, "  Chart:      %s %s\n", chartName(hr), orDash(hr.Status.LastAttemptedRevision))
	fmt.Fprintf(out, "  Revision:   %d\n", helmRevision(hr))
	kind, key := chartSource(hr)
	fmt.Fprintf(out, "  Source:     %s %s %s\n", kind, key, t.sourceState(ctx, s, kind, key))
}

// chartSource is the kind and key of the object the chart comes from.
func chartSource(hr *kraanv1.HelmRelease) (string, client.ObjectKey) {
	ns := func(n string) string {
		if n == "" {
			return hr.Namespace
		}
		return n
	}
	if ref := hr.Spec.ChartRef; ref != nil {
		return ref.Kind, client.ObjectKey{Namespace: ns(ref.Namespace), Name: ref.Name}
	}
	if hr.Spec.Chart == nil || hr.Spec.Chart.Spec.SourceRef == nil {
		return "", client.ObjectKey{}
	}
	ref := hr.Spec.Chart.Spec.SourceRef
	return ref.Kind, client.ObjectKey{Namespace: ns(ref.Namespace), Name: ref.Name}
}

func (t *traceOptions) printLayer(ctx context.Context, out io.Writer, s *session, name string) error {
	l := &kraanv1.AddonsLayer{}
	if err := s.client.Get(ctx, client.ObjectKey{Name: name}, l); err != nil {
		return getError(layerKind, "", name, err)
	}
	fmt.Fprintf(out, "Layer:        %s %s\n", l.Name, stateText(layerState(l), t.colored()))
	fmt.Fprintf(out, "  Version:    %s\n", l.Spec.Version)
	fmt.Fprintf(out, "  Revision:   %s\n", orDash(l.Status.Revision))
	kind := l.Spec.Source.Kind
	if kind == "" || strings.Contains(kind, ".") {
		kind = sourcev1.GitRepositoryKind
		if strings.HasPrefix(l.Spec.Source.Kind, "oci") {
			kind = sourcev1.OCIRepositoryKind
		} else if strings.HasPrefix(l.Spec.Source.Kind, "bucket") {
			kind = sourcev1.BucketKind
		}
	}
	ns := l.Spec.Source.Namespace
	if ns == "" {
		ns = defaultSourceNamespace(ctx, s, t.sourceNamespace)
	}
	key := client.ObjectKey{Namespace: ns, Name: l.Spec.Source.Name}
	fmt.Fprintf(out, "  Source:     %s %s %s\n", kind, key, t.sourceState(ctx, s, kind, key))
	fmt.Fprintf(out, "  Path:       %s\n", l.Spec.Source.Path)
	return nil
}

// sourceState is a Flux source's Ready state and artifact revision.
func (t *traceOptions) sourceState(ctx context.Context, s *session, kind string, key client.ObjectKey) string {
	src := &unstructured.Unstructured{}
	src.SetGroupVersionKind(sourcev1.GroupVersion.WithKind(kind))
	if err := s.client.Get(ctx, key, src); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return stateText(state{word: "NotFound", tone: toneBad, message: "the source does not exist"}, t.colored())
		}
		return stateText(state{word: "Unknown", tone: toneBusy, message: userMessage(err)}, t.colored())
	}
	conds := sourceConditions(src)
	generation := src.GetGeneration()
	observed, _, _ := unstructured.NestedInt64(src.Object, "status", "observedGeneration")
	st := conditionsState(conds, generation, observed, false)
	rev, _, _ := unstructured.NestedString(src.Object, "status", "artifact", "revision")
	if rev != "" {
		return stateText(st, t.colored()) + " artifact " + rev
	}
	return stateText(st, t.colored())
}

func sourceConditions(src *unstructured.Unstructured) []metav1.Condition {
	raw, _, _ := unstructured.NestedSlice(src.Object, "status", "conditions")
	conds := make([]metav1.Condition, 0, len(raw))
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		c := metav1.Condition{}
		c.Type, _ = m["type"].(string)
		status, _ := m["status"].(string)
		c.Status = metav1.ConditionStatus(status)
		c.Reason, _ = m["reason"].(string)
		c.Message, _ = m["message"].(string)
		conds = append(conds, c)
	}
	return conds
}
