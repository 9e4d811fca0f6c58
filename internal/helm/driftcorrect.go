package helm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/fluxcd/pkg/ssa/jsondiff"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The label Helm puts on every object it creates, beside the ownership
// annotations.
const (
	managedByLabel = "app.kubernetes.io/managed-by"
	managedByHelm  = "Helm"
)

// correctDrift puts drifted objects of rel back the way Flux does. A deleted
// object is created again whole from the manifest: its ignored fields have no
// live value left to keep, so they take the manifest's. An object that
// changed gets a JSON patch of its diff's operations and nothing more:
// jsondiff removed the ignored paths from both sides before comparing, so a
// field an ignore rule covers keeps the value an HPA or a person gave it, and
// the operator takes no ownership of it (a server-side apply of the whole
// manifest, as before, reset it and owned it). An object that cannot be
// corrected does not keep the others from being corrected.
func correctDrift(ctx context.Context, c client.Client, owner releaseOwner, diffs []*jsondiff.Diff, rules jsondiff.CompiledIgnoreRules) error {
	var errs []error
	for _, d := range diffs {
		desired := d.DesiredObject.(*unstructured.Unstructured)
		if err := correctObject(ctx, c, owner, d, ignoredPaths(rules, desired)); err != nil {
			errs = append(errs, fmt.Errorf("correcting drift of %s: %w", objectID(desired), err))
		}
	}
	return errors.Join(errs...)
}

func correctObject(ctx context.Context, c client.Client, owner releaseOwner, d *jsondiff.Diff, ignored []string) error {
	desired := d.DesiredObject.(*unstructured.Unstructured)
	if d.Type == jsondiff.DiffTypeCreate {
		return withoutSecretData(desired, recreate(ctx, c, owner, desired))
	}
	patch, err := correctionPatch(d, ignored)
	if err != nil {
		return err
	}
	err = c.Patch(ctx, desired.DeepCopy(), client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(driftFieldOwner))
	return withoutSecretData(desired, err)
}

// recreate creates a deleted object of a release again, with the ownership
// Helm gives every object it creates: without it the release would no longer
// own the object, so later drift on it would not be corrected and the next
// upgrade would refuse to adopt it.
func recreate(ctx context.Context, c client.Client, owner releaseOwner, desired *unstructured.Unstructured) error {
	obj := desired.DeepCopy()
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[managedByLabel] = managedByHelm
	obj.SetLabels(labels)
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[ReleaseNameAnnotation] = owner.name
	annotations[ReleaseNamespaceAnnotation] = owner.namespace
	obj.SetAnnotations(annotations)
	return c.Create(ctx, obj, client.FieldOwner(driftFieldOwner))
}

// correctionPatch is the JSON patch (RFC 6902) that corrects one changed
// object: a test that the object still has the resourceVersion the diff was
// made against, so that a change made since fails the patch (and the next
// pass compares again) instead of being patched blindly, then the diff's
// operations. It refuses a patch that would change a path an ignore rule
// covers: jsondiff's leaf operations never do, but an operation on a parent
// (a replaced map, a removed list item) would carry the child with it.
func correctionPatch(d *jsondiff.Diff, ignored []string) ([]byte, error) {
	live, ok := d.ClusterObject.(*unstructured.Unstructured)
	if !ok || live == nil {
		return nil, fmt.Errorf("no live object to patch")
	}
	if err := keepsIgnored(live, d, ignored); err != nil {
		return nil, err
	}
	test, err := json.Marshal(map[string]string{"op": "test", "path": "/metadata/resourceVersion", "value": live.GetResourceVersion()})
	if err != nil {
		return nil, err
	}
	ops := []json.RawMessage{test}
	for _, op := range d.Patch {
		data, err := json.Marshal(op)
		if err != nil {
			return nil, fmt.Errorf("encoding the patch operation on %s: %w", op.Path, err)
		}
		ops = append(ops, data)
	}
	return json.Marshal(ops)
}

// keepsIgnored applies d's operations to a copy of live and checks that every
// ignored path holds what it held before.
func keepsIgnored(live *unstructured.Unstructured, d *jsondiff.Diff, ignored []string) error {
	after := live.DeepCopy()
	if err := jsondiff.ApplyPatchToUnstructured(after, d.Patch); err != nil {
		return fmt.Errorf("the drift patch does not apply to the live object: %w", err)
	}
	for _, path := range ignored {
		before, had := valueAt(live.Object, path)
		now, has := valueAt(after.Object, path)
		if had != has || !equality.Semantic.DeepEqual(before, now) {
			return fmt.Errorf("the correction would change %s, which an ignore rule covers", path)
		}
	}
	return nil
}

// ignoredPaths are the paths of the ignore rules whose target selects obj
// (all of them for a rule without target), as jsondiff matched them.
func ignoredPaths(rules jsondiff.CompiledIgnoreRules, obj *unstructured.Unstructured) []string {
	var paths []string
	for selector, rulePaths := range rules {
		if selector.MatchUnstructured(obj) {
			paths = append(paths, rulePaths...)
		}
	}
	return paths
}

// valueAt is the value at a JSON pointer (RFC 6901) in a decoded JSON
// document, and whether there is one.
func valueAt(doc any, pointer string) (any, bool) {
	if pointer == "" {
		return doc, true
	}
	if !strings.HasPrefix(pointer, "/") {
		return nil, false
	}
	for _, token := range strings.Split(pointer[1:], "/") {
		token = strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
		switch node := doc.(type) {
		case map[string]any:
			child, ok := node[token]
			if !ok {
				return nil, false
			}
			doc = child
		case []any:
			i, err := strconv.Atoi(token)
			if err != nil || i < 0 || i >= len(node) {
				return nil, false
			}
			doc = node[i]
		default:
			return nil, false
		}
	}
	return doc, true
}

// withoutSecretData keeps the API server's message out of an error writing a
// Secret: it may quote an invalid value, and it ends up in a condition.
func withoutSecretData(obj *unstructured.Unstructured, err error) error {
	gvk := obj.GroupVersionKind()
	if err == nil || gvk.Group != "" || gvk.Kind != "Secret" {
		return err
	}
	if reason := apierrors.ReasonForError(err); reason != "" {
		return fmt.Errorf("the API server refused the change: %s", reason)
	}
	return fmt.Errorf("the change failed")
}
