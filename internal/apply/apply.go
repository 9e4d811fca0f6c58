package apply

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	"github.com/fluxcd/pkg/ssa"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/manifest"
)

// Names the operator writes on the objects it applies.
const (
	// FieldManager owns every field the operator applies server-side.
	FieldManager = "kraan-operator"
	// ReleasedAtAnnotation marks an object its layer no longer defines, with the
	// time (RFC 3339) it was released. Another layer may adopt it until the
	// layer's grace period (spec.interval) has passed; then it is pruned.
	ReleasedAtAnnotation = "kraan.io/released-at"
	// PruneAnnotation set to PruneDisabled keeps an object on the cluster when
	// its layer stops defining it or is deleted.
	PruneAnnotation = "kraan.io/prune"
	// PruneDisabled is the value of PruneAnnotation that opts out of pruning.
	PruneDisabled = "disabled"
	// ForceAnnotation set to ForceEnabled lets the operator delete and recreate an
	// object whose immutable fields changed (a Job's template, a Service's
	// clusterIP). Without it such a change fails the layer instead.
	ForceAnnotation = "kraan.io/force"
	// ForceEnabled is the value of ForceAnnotation that opts in to recreation.
	ForceEnabled = "enabled"
)

// OwnershipConflictError means an object of this layer is owned by another
// layer that has not released it.
type OwnershipConflictError struct {
	// Object names the object, e.g. "HelmRelease apps/podinfo".
	Object string
	// Layer is the layer that tried to apply it.
	Layer string
	// Owner is the layer that owns it.
	Owner string
}

// Error implements error.
func (e *OwnershipConflictError) Error() string {
	return fmt.Sprintf("%s is defined by layers %s and %s: it is owned by layer %s; remove it from one of them",
		e.Object, e.Owner, e.Layer, e.Owner)
}

// Applier applies, releases, adopts and prunes a layer's objects. Its client
// must read unstructured objects from the API server, not a cache (the
// controller-runtime default), so ownership is judged on fresh data.
type Applier struct {
	client  client.Client
	poller  *polling.StatusPoller
	owner   ssa.Owner
	manager *ssa.ResourceManager
	// readyKinds are judged by their Ready condition at their generation.
	readyKinds map[schema.GroupKind]bool
	// owns, when set, replaces the inventory check of Owns (WithOwnership).
	owns OwnershipFunc
}

// OwnershipFunc says whether layer owns the object ref names, on the
// cluster an Applier acts on.
type OwnershipFunc func(ctx context.Context, layer string, ref Ref) (bool, error)

// WithOwnership is a copy of a whose Owns asks owns: on a cluster the
// layers are placed on, the proof of ownership is in the management
// cluster, not in an AddonsLayer of the cluster itself.
func (a *Applier) WithOwnership(owns OwnershipFunc) *Applier {
	c := *a
	c.owns = owns
	return &c
}

// NewApplier returns an Applier using c for reads and writes. Objects of
// readyKinds, and kraan.io HelmReleases, are healthy only when their Ready
// condition is True for their current generation: kinds the operator itself
// reconciles (the chart-backed kinds of watches.yaml), which kstatus would
// call healthy before the operator wrote any status.
func NewApplier(c client.Client, readyKinds ...schema.GroupKind) *Applier {
	c = secretGuard{Client: c}
	poller := polling.NewStatusPoller(c, c.RESTMapper(), polling.Options{})
	kinds := map[schema.GroupKind]bool{kraanv1.GroupVersion.WithKind("HelmRelease").GroupKind(): true}
	for _, gk := range readyKinds {
		kinds[gk] = true
	}
	owner := ssa.Owner{Field: FieldManager, Group: "kraan.io"}
	manager := ssa.NewResourceManager(c, poller, owner)
	// A layer's reconcile reads and dry-runs each of its objects: one at a
	// time, those round trips are most of the time a layer takes on top of
	// its rollout, and it runs again on every change of an object's health.
	manager.SetConcurrency(concurrentReads)
	return &Applier{client: c, poller: poller, owner: owner, manager: manager, readyKinds: kinds}
}

// concurrentReads bounds the requests one layer sends at once.
const concurrentReads = 8

// forEach calls fn for every object, concurrentReads at a time, and returns
// the error of the first object in objs' order that failed, so a message
// names the same object whichever request answered first.
func forEach(ctx context.Context, objs []*unstructured.Unstructured, fn func(ctx context.Context, i int) error) error {
	return forEachIndex(ctx, len(objs), fn)
}

// forEachIndex calls fn for 0 ≤ i < n as forEach does.
func forEachIndex(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	errs := make([]error, n)
	var g errgroup.Group
	g.SetLimit(concurrentReads)
	for i := range n {
		g.Go(func() error {
			errs[i] = fn(ctx, i)
			return nil
		})
	}
	_ = g.Wait() // the errors are in errs
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Apply applies objs, owned by layer, server-side in stages (see the package
// doc) and returns how many objects changed. It first checks that no object is
// owned by another layer: nothing is applied when one is.
func (a *Applier) Apply(ctx context.Context, layer string, objs []*unstructured.Unstructured) (int, error) {
	if err := forEach(ctx, objs, func(ctx context.Context, i int) error {
		return a.checkOwner(ctx, layer, objs[i])
	}); err != nil {
		return 0, err
	}
	opts := ssa.DefaultApplyOptions()
	opts.ForceSelector = map[string]string{ForceAnnotation: ForceEnabled}
	// CRDs are established and namespaces active within a second; poll often
	// so a layer's apply is not held up by the default 2s interval.
	opts.WaitInterval = 200 * time.Millisecond
	opts.WaitTimeout = 30 * time.Second
	cs, err := a.applyStaged(ctx, objs, opts)
	if err != nil {
		return 0, readable(fmt.Errorf("applying: %w", err))
	}
	changed := 0
	for _, e := range cs.Entries {
		if e.Action != ssa.UnchangedAction && e.Action != ssa.SkippedAction {
			changed++
		}
	}
	return changed, nil
}

// checkOwner fails when obj exists and another layer owns it: its label names
// that layer and that layer's inventory lists it (see Owns). A label alone
// blocks nothing: anyone who may edit the object may set it.
func (a *Applier) checkOwner(ctx context.Context, layer string, obj *unstructured.Unstructured) error {
	existing, err := a.get(ctx, obj)
	if err != nil || existing == nil {
		return err
	}
	owner := existing.GetLabels()[manifest.LayerLabel]
	if owner == "" || owner == layer {
		return nil
	}
	owned, err := a.Owns(ctx, owner, RefOf(obj))
	if err != nil || !owned {
		return err
	}
	return &OwnershipConflictError{Object: Describe(obj), Layer: layer, Owner: owner}
}

// Owns says whether layer owns the object ref names: the layer exists and its
// inventory (status.resources) lists the object. The inventory is the proof
// of ownership because only the operator writes it, on a cluster-scoped
// object: the layer label (and managedFields) are written by whoever may
// edit the object, a tenant included, so a tenant could claim its own
// object for any layer, or one of a layer's objects for another.
func (a *Applier) Owns(ctx context.Context, layer string, ref Ref) (bool, error) {
	if a.owns != nil {
		return a.owns(ctx, layer, ref)
	}
	l := &kraanv1.AddonsLayer{}
	err := a.client.Get(ctx, client.ObjectKey{Name: layer}, l)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading layer %s, which %s is labelled for: %w", layer, ref, err)
	}
	return Lists(l.Status.Resources, ref), nil
}

// Lists says whether inventory lists the object ref names, in any version
// of its kind.
func Lists(inventory []kraanv1.Resource, ref Ref) bool {
	key := ref.Key()
	for _, res := range inventory {
		if RefOfResource(res).Key() == key {
			return true
		}
	}
	return false
}

// get reads the live copy of obj; nil when it does not exist.
func (a *Applier) get(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return Live(ctx, a.client, obj)
}

// Live reads the live copy of obj through c; nil when it, or its kind, does
// not exist.
func Live(ctx context.Context, c client.Reader, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	err := c.Get(ctx, client.ObjectKeyFromObject(obj), live)
	switch {
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		// No match: the CRD is applied in the same stage, so the object is new.
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", Describe(obj), err)
	}
	return live, nil
}

// Describe names an object in messages: "HelmRelease apps/podinfo".
func Describe(obj client.Object) string {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if ns := obj.GetNamespace(); ns != "" {
		return kind + " " + ns + "/" + obj.GetName()
	}
	return kind + " " + obj.GetName()
}

// valueDump is how the API server's structured-merge-diff prints a value it
// could not convert: ".data.x: expected string, got &value.valueUnstructured{Value:1}".
var valueDump = regexp.MustCompile(`&value\.valueUnstructured\{Value:(.*?)\}`)

// readable returns err with Go value dumps replaced by the value, so that a
// message says "expected string, got 1"; errors.Is and errors.As still see
// the chain.
func readable(err error) error {
	msg := valueDump.ReplaceAllString(err.Error(), "$1")
	if msg == err.Error() {
		return err
	}
	return &readableError{msg: msg, err: err}
}

type readableError struct {
	msg string
	err error
}

func (e *readableError) Error() string { return e.msg }
func (e *readableError) Unwrap() error { return e.err }
