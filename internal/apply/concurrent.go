package apply

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/fluxcd/pkg/ssa"
	"github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// applyStaged applies objs as ssa.ResourceManager.ApplyAllStaged does (the
// cluster definitions, then the class definitions, each waited for, then
// everything else), except that the last stage's applies run concurrently.
//
// ApplyAll reads and dry-runs every object concurrently, and applies nothing
// unless all of them pass; then it applies the changed ones one at a time. A
// layer of ten HelmReleases spent 0.3 s in that loop, and its releases
// started installing that far apart. The last stage therefore goes through
// ApplyAll with a client that holds its applies back, and they are sent
// afterwards: kind after kind in ApplyAll's order (a ServiceAccount before
// the Deployment that runs as it, as Helm does), the objects of one kind at
// once.
func (a *Applier) applyStaged(ctx context.Context, objs []*unstructured.Unstructured, opts ssa.ApplyOptions) (*ssa.ChangeSet, error) {
	var definitions, rest []*unstructured.Unstructured
	for _, o := range objs {
		if utils.IsClusterDefinition(o) || utils.IsClassDefinition(o) || utils.IsCustomStage(o, opts.CustomStageKinds) {
			definitions = append(definitions, o)
		} else {
			rest = append(rest, o)
		}
	}
	changes := ssa.NewChangeSet()
	if len(definitions) > 0 {
		cs, err := a.manager.ApplyAllStaged(ctx, definitions, opts)
		if err != nil {
			return nil, err
		}
		changes.Append(cs.Entries)
	}
	if len(rest) == 0 {
		return changes, nil
	}
	held := &heldApplies{Client: a.client}
	manager := ssa.NewResourceManager(held, a.poller, a.owner)
	manager.SetConcurrency(concurrentReads)
	cs, err := manager.ApplyAll(ctx, rest, opts)
	if err != nil {
		return nil, err
	}
	if err := held.send(ctx); err != nil {
		return nil, err
	}
	changes.Append(cs.Entries)
	return changes, nil
}

// heldApplies is a client that records server-side applies instead of
// sending them; dry runs and every other request go through.
type heldApplies struct {
	client.Client
	mu      sync.Mutex
	applies []heldApply
}

type heldApply struct {
	obj   *unstructured.Unstructured
	patch client.Patch
	opts  []client.PatchOption
}

// Patch holds back an apply that is not a dry run (ApplyAll's objects are
// unstructured).
func (h *heldApplies) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || !isApply(patch, opts) {
		return h.Client.Patch(ctx, obj, patch, opts...)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.applies = append(h.applies, heldApply{obj: u, patch: patch, opts: slices.Clone(opts)})
	return nil
}

// isApply says whether a patch is a server-side apply that is not a dry run.
func isApply(patch client.Patch, opts []client.PatchOption) bool {
	po := &client.PatchOptions{}
	po.ApplyOptions(opts)
	return patch.Type() == types.ApplyPatchType && len(po.DryRun) == 0
}

// send applies what was held, in the order it was held: each run of objects
// of one kind concurrently, the runs one after the other. The error names the
// first object in that order whose apply failed.
func (h *heldApplies) send(ctx context.Context) error {
	for start := 0; start < len(h.applies); {
		end := start + 1
		kind := h.applies[start].obj.GroupVersionKind().GroupKind()
		for end < len(h.applies) && h.applies[end].obj.GroupVersionKind().GroupKind() == kind {
			end++
		}
		run := h.applies[start:end]
		err := forEachIndex(ctx, len(run), func(ctx context.Context, i int) error {
			obj := run[i].obj
			if err := h.Client.Patch(ctx, obj, run[i].patch, run[i].opts...); err != nil {
				return fmt.Errorf("%s apply failed: %w", utils.FmtUnstructured(obj), err) // as ApplyAll words it
			}
			return nil
		})
		if err != nil {
			return err
		}
		start = end
	}
	return nil
}
