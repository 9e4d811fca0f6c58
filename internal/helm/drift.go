package helm

import (
	"bytes"
	"context"
	"fmt"
	"sort"

	"github.com/fluxcd/pkg/ssa/jsondiff"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// driftFieldOwner is the field manager of drift checks (server-side dry-run
// applies) and corrections (JSON patches): a correction makes the operator
// the manager of the fields it puts back, and of no other.
const driftFieldOwner = "kraan-operator"

// An object of a release annotated DriftDetectionAnnotation:
// DriftDetectionDisabled (on the cluster's object or in the chart) is left
// out of drift detection, as in Flux.
const (
	DriftDetectionAnnotation = "helm.toolkit.fluxcd.io/driftDetection"
	DriftDetectionDisabled   = "disabled"
)

// DriftedObject is one object of a release that differs from its manifest.
type DriftedObject struct {
	// ID is "<Kind>/<namespace>/<name>".
	ID string
	// Missing is true when the object was deleted.
	Missing bool
	// Paths are the JSON pointers that differ, e.g. /spec/replicas.
	Paths []string
}

// DriftReport says how a deployed release differs from the cluster.
type DriftReport struct {
	Drifted   []DriftedObject
	Corrected bool
}

// Message names the drifted objects and fields, for a condition or event.
func (r DriftReport) Message() string {
	var b bytes.Buffer
	for i, d := range r.Drifted {
		if i > 0 {
			b.WriteString("; ")
		}
		switch {
		case d.Missing:
			fmt.Fprintf(&b, "%s was deleted", d.ID)
		default:
			fmt.Fprintf(&b, "%s changed at %v", d.ID, d.Paths)
		}
	}
	return b.String()
}

// DriftOptions say what a drift check leaves out and whether it corrects
// what it finds.
type DriftOptions struct {
	// Correct puts drifted fields back (Flux's driftDetection mode enabled).
	Correct bool
	// Ignore are the paths of objects that never count as drift.
	Ignore []jsondiff.IgnoreRule
}

// CheckDrift compares the objects of rel's manifest with the cluster through
// server-side dry-run applies (so defaults and other managers' fields do not
// count as drift) and, when opts.Correct, corrects the drifted fields no
// ignore rule covers (see correctDrift).
func (e *Engine) CheckDrift(ctx context.Context, target Target, rel *Revision, opts DriftOptions) (DriftReport, error) {
	rules, err := jsondiff.CompileIgnoreRules(opts.Ignore)
	if err != nil {
		return DriftReport{}, fmt.Errorf("spec.driftDetection.ignore: %w", err)
	}
	// Secrets are not masked: the diff's operations are the correction
	// patch. The report keeps only the paths, never a value.
	c, diffs, err := e.compareManifest(ctx, target, rel.Manifest,
		jsondiff.IgnoreRules(opts.Ignore), jsondiff.ExclusionSelector{DriftDetectionAnnotation: DriftDetectionDisabled})
	if err != nil {
		return DriftReport{}, fmt.Errorf("comparing release %s with the cluster: %w", rel.Name, err)
	}
	report := DriftReport{}
	owner := releaseOwner{name: rel.Name, namespace: rel.Namespace}
	var drifted []*jsondiff.Diff
	for _, d := range diffs {
		if d.Type != jsondiff.DiffTypeCreate && d.Type != jsondiff.DiffTypeUpdate {
			continue
		}
		report.Drifted = append(report.Drifted, driftedObject(d))
		if correctable(rel, owner, d) {
			drifted = append(drifted, d)
		}
	}
	if len(drifted) == 0 || !opts.Correct {
		return report, nil
	}
	if err := correctDrift(ctx, c, owner, drifted, rules); err != nil {
		return report, err
	}
	report.Corrected = true
	return report, nil
}

func driftedObject(d *jsondiff.Diff) DriftedObject {
	obj := d.DesiredObject.(*unstructured.Unstructured)
	drifted := DriftedObject{ID: objectID(obj), Missing: d.Type == jsondiff.DiffTypeCreate}
	for _, op := range d.Patch {
		drifted.Paths = append(drifted.Paths, op.Path)
	}
	sort.Strings(drifted.Paths)
	return drifted
}

func objectID(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() == "" {
		return obj.GetKind() + "/" + obj.GetName()
	}
	return obj.GetKind() + "/" + obj.GetNamespace() + "/" + obj.GetName()
}

// compareManifest compares the objects of a release's manifest with the
// cluster through server-side dry-run applies as target's identity, so
// defaults and other managers' fields are no difference; it returns the
// client it compared with.
func (e *Engine) compareManifest(ctx context.Context, target Target, manifest string, opts ...jsondiff.ListOption) (client.Client, jsondiff.DiffSet, error) {
	c, err := e.clientFor(target)
	if err != nil {
		return nil, nil, err
	}
	objs, err := manifestObjects(manifest, target.Namespace, c.RESTMapper())
	if err != nil {
		return nil, nil, err
	}
	diffs, err := jsondiff.UnstructuredList(ctx, c, objs, append([]jsondiff.ListOption{jsondiff.FieldOwner(driftFieldOwner), jsondiff.Graceful(true)}, opts...)...)
	return c, diffs, err
}

// clientFor is a client acting as target's identity, on the shared mapper.
func (e *Engine) clientFor(target Target) (client.Client, error) {
	cc, err := e.clientsFor(target)
	if err != nil {
		return nil, err
	}
	config := rest.CopyConfig(cc.config)
	if target.Impersonate != "" {
		config.Impersonate = rest.ImpersonationConfig{UserName: target.Impersonate}
	}
	c, err := client.New(config, client.Options{Mapper: cc.mapper})
	if err != nil {
		return nil, fmt.Errorf("creating a client for drift detection: %w", err)
	}
	return c, nil
}

// manifestObjects decodes a release manifest, putting namespaced objects
// without a namespace into the release's, as Helm does when it applies them.
func manifestObjects(manifest, namespace string, mapper meta.RESTMapper) ([]*unstructured.Unstructured, error) {
	objs, err := decodeObjects([]byte(manifest))
	if err != nil {
		return nil, fmt.Errorf("decoding the release manifest: %w", err)
	}
	for _, obj := range objs {
		if obj.GetNamespace() == "" && namespaced(mapper, obj) {
			obj.SetNamespace(namespace)
		}
	}
	return objs, nil
}

func namespaced(mapper meta.RESTMapper, obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	return err == nil && mapping.Scope.Name() == meta.RESTScopeNameNamespace
}
