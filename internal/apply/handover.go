package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/internal/manifest"
)

// ReleaseOutcome is what became of an object its layer no longer defines.
type ReleaseOutcome int

const (
	// Gone means the layer no longer tracks the object: it does not exist, another
	// layer adopted it, or it opted out of pruning and stays on the cluster.
	Gone ReleaseOutcome = iota
	// Pending means the object is released and waits for adoption until Until.
	Pending
	// Pruned means the grace period passed without adoption: the object was deleted.
	Pruned
)

// ReleaseResult reports one Release.
type ReleaseResult struct {
	Outcome ReleaseOutcome
	// Until is when a Pending object will be pruned.
	Until time.Time
}

// Release handles an object layer applied before but no longer defines: it
// marks it released (first call), then deletes it once grace has passed since
// then, unless another layer adopted it or it opted out of pruning. Deleting a
// kraan.io HelmRelease uninstalls its release through that controller's finalizer.
func (a *Applier) Release(ctx context.Context, layer string, ref Ref, grace time.Duration, now time.Time) (ReleaseResult, error) {
	live, err := a.get(ctx, ref.Object())
	if err != nil || live == nil {
		return ReleaseResult{Outcome: Gone}, err
	}
	if live.GetAnnotations()[PruneAnnotation] == PruneDisabled {
		return ReleaseResult{Outcome: Gone}, nil
	}
	if owner := live.GetLabels()[manifest.LayerLabel]; owner != layer {
		// Another layer adopted it, or someone relabelled it: only the
		// first is proof that it is no longer this layer's (see Owns).
		adopted, err := a.Owns(ctx, owner, ref)
		if err != nil || adopted || owner == "" {
			return ReleaseResult{Outcome: Gone}, err
		}
	}
	at, marked := releasedAt(live)
	if !marked {
		at = now
		if err := a.patchMetadata(ctx, live, nil, map[string]any{ReleasedAtAnnotation: now.UTC().Format(time.RFC3339)}); err != nil {
			return ReleaseResult{}, fmt.Errorf("releasing %s: %w", ref, err)
		}
	}
	if until := at.Add(grace); now.Before(until) {
		return ReleaseResult{Outcome: Pending, Until: until}, nil
	}
	if err := client.IgnoreNotFound(a.client.Delete(ctx, live, client.PropagationPolicy("Background"))); err != nil {
		return ReleaseResult{}, fmt.Errorf("pruning %s: %w", ref, err)
	}
	return ReleaseResult{Outcome: Pruned}, nil
}

// Adopt takes over obj when its live copy was released by its layer (or by
// this one, when it defines the object again): the layer labels are switched
// to layer and the release mark removed, nothing else changes. It reports
// whether obj was adopted.
func (a *Applier) Adopt(ctx context.Context, layer string, obj *unstructured.Unstructured) (bool, error) {
	live, err := a.get(ctx, obj)
	if err != nil || live == nil {
		return false, err
	}
	if _, released := releasedAt(live); !released {
		return false, nil
	}
	labels := map[string]any{manifest.LayerLabel: layer, manifest.KraanLayerLabel: layer}
	if err := a.patchMetadata(ctx, live, labels, map[string]any{ReleasedAtAnnotation: nil}); err != nil {
		return false, fmt.Errorf("adopting %s: %w", Describe(obj), err)
	}
	return true, nil
}

// AdoptAll adopts each of objs (see Adopt), several at a time, and reports
// which were adopted. A layer reads every object it defines on each
// reconcile, waiting for its dependencies or not: one at a time, the reads
// took as long as the rest of the reconcile.
func (a *Applier) AdoptAll(ctx context.Context, layer string, objs []*unstructured.Unstructured) ([]bool, error) {
	adopted := make([]bool, len(objs))
	err := forEach(ctx, objs, func(ctx context.Context, i int) error {
		var err error
		adopted[i], err = a.Adopt(ctx, layer, objs[i])
		return err
	})
	return adopted, err
}

// releasedAt reads ReleasedAtAnnotation; an unreadable time counts as now so a
// hand-edited value never prunes at once.
func releasedAt(obj *unstructured.Unstructured) (time.Time, bool) {
	v, ok := obj.GetAnnotations()[ReleasedAtAnnotation]
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Now(), true
	}
	return t, true
}

// patchMetadata merge-patches labels and annotations (nil values delete keys).
// A merge patch, not an apply: the release mark must not become part of the
// applied configuration, or the next apply would remove it.
func (a *Applier) patchMetadata(ctx context.Context, obj *unstructured.Unstructured, labels, annotations map[string]any) error {
	meta := map[string]any{}
	if labels != nil {
		meta["labels"] = labels
	}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	body, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return err
	}
	return a.client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, body), client.FieldOwner(FieldManager))
}
