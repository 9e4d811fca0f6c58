package watches

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/kraan-io/kraan-operator/internal/helm"
)

// Watch is one entry of watches.yaml.
type Watch struct {
	// Group of the watched kind; empty for the core group.
	Group string `json:"group"`
	// Version of the watched kind.
	Version string `json:"version"`
	// Kind watched.
	Kind string `json:"kind"`
	// Chart is a chart directory or archive, relative to the watches file.
	Chart string `json:"chart"`
	// WatchDependentResources makes changes to rendered objects trigger a
	// reconcile, so they are restored; true when unset.
	WatchDependentResources *bool `json:"watchDependentResources,omitempty"`
	// OverrideValues are applied onto .spec with `--set` syntax after their
	// environment variables are expanded.
	OverrideValues map[string]string `json:"overrideValues,omitempty"`
	// ReconcilePeriod resyncs every object this often; never when unset.
	ReconcilePeriod *metav1.Duration `json:"reconcilePeriod,omitempty"`
	// MaxConcurrentReconciles is the worker count of this kind; the
	// operator's --max-concurrent-reconciles when unset.
	MaxConcurrentReconciles *int `json:"maxConcurrentReconciles,omitempty"`
	// Selector limits the objects reconciled to those it matches.
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// ServiceAccountName is the ServiceAccount, in each object's namespace,
	// that every Helm action of the object's release impersonates; the
	// operator's --default-service-account when unset. With neither, the
	// actions run as the operator (the unlocked mode).
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// AllowedKinds are the only kinds a release of this kind may create;
	// when unset, the kinds the chart's templates declare literally (see
	// helm.ChartKinds). A declared list wins over the chart.
	AllowedKinds []GroupKind `json:"allowedKinds,omitempty"`
	// AllowClusterScoped lets a release create cluster-scoped objects of
	// its allowed kinds; false by default: every object is in the
	// namespace of the object the release belongs to.
	AllowClusterScoped bool `json:"allowClusterScoped,omitempty"`

	// LoadedChart is Chart, loaded at start so a broken chart stops the
	// operator instead of failing every reconcile.
	LoadedChart *helm.Chart `json:"-"`
	// LabelSelector is Selector, parsed; labels.Everything() when unset.
	LabelSelector labels.Selector `json:"-"`
	// Kinds a release may create: AllowedKinds, or the chart's.
	Kinds []schema.GroupKind `json:"-"`
	// expandedOverrides are OverrideValues after environment expansion.
	expandedOverrides map[string]string
}

// GroupKind names a kind of AllowedKinds; the group is empty for the core
// group, and "*" allows the kind in every group.
type GroupKind struct {
	// Group of the kind; empty for the core group.
	Group string `json:"group,omitempty"`
	// Kind allowed.
	Kind string `json:"kind"`
}

// GroupVersionKind returns the watched kind.
func (w *Watch) GroupVersionKind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: w.Group, Version: w.Version, Kind: w.Kind}
}

// WatchesDependents reports whether rendered objects are watched.
func (w *Watch) WatchesDependents() bool {
	return w.WatchDependentResources == nil || *w.WatchDependentResources
}

// String names the entry in messages: group/version, Kind=kind.
func (w *Watch) String() string {
	return w.GroupVersionKind().String()
}

// Load reads and validates the watches file at path. Every problem is
// reported, each naming its entry, so one start of the operator shows them all.
func Load(path string) ([]Watch, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading watches file: %w", err)
	}
	var list []Watch
	// Strict: a misspelt key (watchDependentResource) would otherwise be
	// silently ignored and change behaviour.
	if err := yaml.UnmarshalStrict(bytes.TrimSpace(data), &list); err != nil {
		return nil, fmt.Errorf("parsing watches file %s: %w", path, err)
	}
	var errs []error
	seen := map[schema.GroupVersionKind]int{}
	for i := range list {
		w := &list[i]
		if err := w.validate(filepath.Dir(path)); err != nil {
			errs = append(errs, fmt.Errorf("watches file %s, entry %d (%s): %w", path, i+1, w, err))
			continue
		}
		if first, dup := seen[w.GroupVersionKind()]; dup {
			errs = append(errs, fmt.Errorf("watches file %s, entry %d (%s): duplicate of entry %d", path, i+1, w, first))
			continue
		}
		seen[w.GroupVersionKind()] = i + 1
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return list, nil
}

// validate checks one entry and fills its derived fields; chart paths are
// resolved against dir, the watches file's directory.
func (w *Watch) validate(dir string) error {
	var errs []error
	if w.Version == "" {
		errs = append(errs, errors.New("version is required"))
	}
	if w.Kind == "" {
		errs = append(errs, errors.New("kind is required"))
	}
	if w.ReconcilePeriod != nil && w.ReconcilePeriod.Duration < 0 {
		errs = append(errs, fmt.Errorf("reconcilePeriod %s is negative", w.ReconcilePeriod.Duration))
	}
	if w.MaxConcurrentReconciles != nil && *w.MaxConcurrentReconciles < 1 {
		errs = append(errs, fmt.Errorf("maxConcurrentReconciles %d is below 1", *w.MaxConcurrentReconciles))
	}
	if w.ServiceAccountName != "" {
		for _, msg := range validation.IsDNS1123Subdomain(w.ServiceAccountName) {
			errs = append(errs, fmt.Errorf("serviceAccountName %q: %s", w.ServiceAccountName, msg))
		}
	}
	errs = append(errs, w.loadChart(dir), w.parseSelector(), w.expandOverrides())
	if w.LoadedChart != nil {
		errs = append(errs, w.resolveKinds())
	}
	return errors.Join(errs...)
}

// resolveKinds fills Kinds from AllowedKinds or, when unset, from the chart.
// A chart that declares no kind literally would fail every release: it needs
// AllowedKinds, which the start-up says.
func (w *Watch) resolveKinds() error {
	if len(w.AllowedKinds) == 0 {
		w.Kinds = helm.ChartKinds(w.LoadedChart)
		if len(w.Kinds) == 0 {
			return fmt.Errorf("chart %s declares no kind in a literal `kind:` line of its templates: list the kinds its releases may create in allowedKinds", w.Chart)
		}
		return nil
	}
	var errs []error
	w.Kinds = make([]schema.GroupKind, 0, len(w.AllowedKinds))
	for i, k := range w.AllowedKinds {
		if k.Kind == "" {
			errs = append(errs, fmt.Errorf("allowedKinds[%d]: kind is required", i))
			continue
		}
		w.Kinds = append(w.Kinds, schema.GroupKind{Group: k.Group, Kind: k.Kind})
	}
	return errors.Join(errs...)
}

// Bounds are what the release of the watched object namespace/name may
// create: objects of its namespace, of Kinds, cluster-scoped ones only when
// AllowClusterScoped.
func (w *Watch) Bounds(namespace, name string) *helm.Bounds {
	return &helm.Bounds{
		Owner:         fmt.Sprintf("%s %s/%s", w.Kind, namespace, name),
		Namespace:     namespace,
		Kinds:         w.Kinds,
		ClusterScoped: w.AllowClusterScoped,
	}
}

// ServiceAccount is the ServiceAccount the releases impersonate: the
// entry's own, or fallback (--default-service-account); empty for none.
func (w *Watch) ServiceAccount(fallback string) string {
	if w.ServiceAccountName != "" {
		return w.ServiceAccountName
	}
	return fallback
}

func (w *Watch) loadChart(dir string) error {
	if w.Chart == "" {
		return errors.New("chart is required")
	}
	if !filepath.IsAbs(w.Chart) {
		w.Chart = filepath.Join(dir, w.Chart)
	}
	loaded, err := helm.LoadChart(w.Chart)
	if err != nil {
		return fmt.Errorf("loading chart %s: %w", w.Chart, err)
	}
	w.LoadedChart = loaded
	return nil
}

func (w *Watch) parseSelector() error {
	w.LabelSelector = labels.Everything()
	if w.Selector == nil {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(w.Selector)
	if err != nil {
		return fmt.Errorf("selector: %w", err)
	}
	w.LabelSelector = sel
	return nil
}

// expandOverrides expands environment variables once, at start, and checks
// that every override parses, so a typo fails the start, not each reconcile.
func (w *Watch) expandOverrides() error {
	w.expandedOverrides = make(map[string]string, len(w.OverrideValues))
	for key, value := range w.OverrideValues {
		expanded := os.ExpandEnv(value)
		if err := helm.ParseSetValue(key+"="+expanded, map[string]any{}); err != nil {
			return fmt.Errorf("overrideValues %s: %w", key, err)
		}
		w.expandedOverrides[key] = expanded
	}
	return nil
}

// Values returns the release values of an object whose .spec is spec: a deep
// copy of spec with the overrides applied on top.
func (w *Watch) Values(spec map[string]any) (map[string]any, error) {
	// A deep copy so overrides never write into the cached object;
	// DeepCopyJSON keeps integers as int64 where a YAML round trip would not.
	values := map[string]any{}
	if spec != nil {
		values = runtime.DeepCopyJSON(spec)
	}
	for key, value := range w.expandedOverrides {
		if err := helm.ParseSetValue(key+"="+value, values); err != nil {
			return nil, fmt.Errorf("applying overrideValues %s: %w", key, err)
		}
	}
	return values, nil
}

// ResyncPeriod returns the reconcile period, zero when none is set.
func (w *Watch) ResyncPeriod() time.Duration {
	if w.ReconcilePeriod == nil {
		return 0
	}
	return w.ReconcilePeriod.Duration
}

// Workers returns the worker count, fallback when the entry sets none.
func (w *Watch) Workers(fallback int) int {
	if w.MaxConcurrentReconciles == nil {
		return fallback
	}
	return *w.MaxConcurrentReconciles
}
