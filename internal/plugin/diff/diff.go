package diff

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/fluxcd/pkg/ssa/normalize"
	"github.com/pmezard/go-difflib/difflib"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kraan-io/kraan-operator/internal/apply"
	"github.com/kraan-io/kraan-operator/internal/redact"
	"github.com/kraan-io/kraan-operator/internal/tenancy"
)

// Action is what applying the desired state would do to one object.
type Action string

// The actions, as a diff header says them.
const (
	Create    Action = "created"
	Update    Action = "changed"
	Delete    Action = "deleted"
	Unchanged Action = "unchanged"
)

// Change is one object's live and desired state, both cleaned of what the
// API server manages (status, managedFields, resourceVersion…) and masked.
type Change struct {
	// ID names the object: "ConfigMap apps/settings".
	ID      string
	Action  Action
	Live    *unstructured.Unstructured
	Desired *unstructured.Unstructured
	// Note says why, for a deletion: "no longer in layer base".
	Note string
}

// Options tune Compare.
type Options struct {
	// FieldManager is the manager the dry runs apply as: the operator's for
	// layers, so fields it owns and no longer sets show as removed.
	FieldManager string
	// DeleteNote explains the deletion of an object that is no longer desired.
	DeleteNote string
}

// Compare returns the changes that applying desired would make, and the
// deletion of every object of current (what was applied before) that desired
// no longer has. Nothing is written: every apply is a dry run.
func Compare(ctx context.Context, c client.Client, desired, current []*unstructured.Unstructured, opts Options) ([]Change, error) {
	wanted := map[string]bool{}
	var changes []Change
	for _, obj := range desired {
		wanted[keyOf(obj)] = true
		ch, err := compareOne(ctx, c, obj, opts)
		if err != nil {
			return nil, err
		}
		changes = append(changes, ch)
	}
	for _, obj := range current {
		if wanted[keyOf(obj)] {
			continue
		}
		live, err := apply.Live(ctx, c, obj)
		if err != nil {
			return nil, err
		}
		if live == nil {
			continue // already gone
		}
		wanted[keyOf(obj)] = true
		changes = append(changes, Change{ID: apply.Describe(obj), Action: Delete, Live: clean(live), Note: opts.DeleteNote})
	}
	maskSecrets(changes)
	return changes, nil
}

// compareOne dry-runs the apply of obj and compares it with the live object.
func compareOne(ctx context.Context, c client.Client, obj *unstructured.Unstructured, opts Options) (Change, error) {
	ch := Change{ID: apply.Describe(obj)}
	live, err := apply.Live(ctx, c, obj)
	if err != nil {
		return ch, err
	}
	dry := obj.DeepCopy()
	err = c.Patch(ctx, dry, client.Apply, client.DryRunAll, client.ForceOwnership, client.FieldOwner(opts.FieldManager)) //nolint:staticcheck // client.Apply with unstructured objects is the supported way here
	// The API server quotes a Secret value it refuses: name the field instead.
	err = redact.SecretError(obj, err)
	switch {
	case err == nil:
		if err := normalize.DryRunUnstructured(dry); err != nil {
			return ch, fmt.Errorf("normalizing %s: %w", ch.ID, err)
		}
	case live == nil && (apierrors.IsNotFound(err) || meta.IsNoMatchError(err)):
		// Its namespace or its CRD is created by the same apply: the dry
		// run cannot see them, so show the object as rendered.
		dry = obj.DeepCopy()
	default:
		return ch, fmt.Errorf("dry-run apply of %s: %w", ch.ID, err)
	}
	ch.Desired = clean(dry)
	if live == nil {
		ch.Action = Create
		return ch, nil
	}
	ch.Live = clean(live)
	ch.Action = Update
	if toYAML(ch.Live) == toYAML(ch.Desired) {
		ch.Action = Unchanged
	}
	return ch, nil
}

func keyOf(obj *unstructured.Unstructured) string {
	gvk := obj.GroupVersionKind()
	return gvk.Group + "/" + gvk.Kind + "/" + obj.GetNamespace() + "/" + obj.GetName()
}

// clean drops what the API server manages and a reader does not change.
func clean(obj *unstructured.Unstructured) *unstructured.Unstructured {
	c := obj.DeepCopy()
	for _, f := range []string{"managedFields", "resourceVersion", "uid", "generation", "creationTimestamp", "selfLink"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(c.Object, "metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration")
	// The operator seals a layer's HelmReleases as it applies them; a
	// working copy rendered here has no seal, and needs none to be the same.
	unstructured.RemoveNestedField(c.Object, "metadata", "annotations", tenancy.SealAnnotation)
	if len(c.GetAnnotations()) == 0 {
		unstructured.RemoveNestedField(c.Object, "metadata", "annotations")
	}
	unstructured.RemoveNestedField(c.Object, "status")
	return c
}

func toYAML(obj *unstructured.Unstructured) string {
	if obj == nil {
		return ""
	}
	data, err := yaml.Marshal(obj.Object)
	if err != nil {
		return fmt.Sprintf("# cannot print: %v\n", err)
	}
	return string(data)
}

// Changed reports whether any change is not Unchanged.
func Changed(changes []Change) bool {
	for _, ch := range changes {
		if ch.Action != Unchanged {
			return true
		}
	}
	return false
}

// Write prints the changes as unified diffs, one per changed object, in a
// stable order (by ID).
func Write(out io.Writer, changes []Change, color bool) error {
	sorted := append([]Change(nil), changes...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	for _, ch := range sorted {
		if ch.Action == Unchanged {
			continue
		}
		if err := writeOne(out, ch, color); err != nil {
			return err
		}
	}
	return nil
}

func writeOne(out io.Writer, ch Change, color bool) error {
	header := ch.ID + " " + string(ch.Action)
	if ch.Note != "" {
		header += " (" + ch.Note + ")"
	}
	from, to := "live/"+ch.ID, "desired/"+ch.ID
	switch ch.Action {
	case Create:
		from = "/dev/null"
	case Delete:
		to = "/dev/null"
	}
	text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: lines(toYAML(ch.Live)), B: lines(toYAML(ch.Desired)),
		FromFile: from, ToFile: to, Context: 3,
	})
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(out, "# "+header); err != nil {
		return err
	}
	for _, line := range strings.SplitAfter(text, "\n") {
		if line == "" {
			continue
		}
		if _, err := io.WriteString(out, colorize(line, color)); err != nil {
			return err
		}
	}
	return nil
}

// lines splits text into lines ending in "\n"; none for no text (a created
// or deleted object's missing side).
func lines(text string) []string {
	if text == "" {
		return nil
	}
	return difflib.SplitLines(strings.TrimSuffix(text, "\n"))
}

// colorize colours added lines green and removed lines red, as git does.
func colorize(line string, color bool) string {
	switch {
	case !color, strings.HasPrefix(line, "---"), strings.HasPrefix(line, "+++"):
		return line
	case strings.HasPrefix(line, "+"):
		return "\x1b[32m" + strings.TrimSuffix(line, "\n") + "\x1b[0m\n"
	case strings.HasPrefix(line, "-"):
		return "\x1b[31m" + strings.TrimSuffix(line, "\n") + "\x1b[0m\n"
	}
	return line
}
