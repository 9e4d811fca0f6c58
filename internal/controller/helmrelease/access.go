package helmrelease

import (
	"context"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/outcome"
)

// reconcileAccess holds a layer's HelmRelease whose spec is not the one the
// layer applied (see tenancy.Identity.Unsealed) until the layer applies it
// again, and refuses, under --no-cross-namespace-refs, a release that
// refers to an object in another namespace (its chart's source, a
// dependency), as Flux's flag does: a tenant must not read another tenant's
// sources or wait on its releases. It stalls until the spec changes.
func (r *Reconciler) reconcileAccess(_ context.Context, sc *releaseScope) (ctrl.Result, error) {
	if err := r.Tenancy.IdentityOf(sc.hr).Unsealed; err != nil {
		return ctrl.Result{}, outcome.Waiting(kraanv1.ReasonLayerSealMismatch, unsealedRecheck, err)
	}
	if !r.NoCrossNamespaceRefs {
		return ctrl.Result{}, nil
	}
	if field, namespace := crossNamespaceRef(sc.hr); field != "" {
		return ctrl.Result{}, outcome.Terminal(kraanv1.ReasonAccessDenied, fmt.Errorf(
			"%s refers to namespace %s, but cross-namespace references are disabled (--no-cross-namespace-refs): "+
				"use an object in namespace %s", field, namespace, sc.hr.Namespace))
	}
	return ctrl.Result{}, nil
}

// crossNamespaceRef returns the first field of hr that names another
// namespace, and that namespace.
func crossNamespaceRef(hr *kraanv1.HelmRelease) (field, namespace string) {
	other := func(ns string) bool { return ns != "" && ns != hr.Namespace }
	if ref := hr.Spec.ChartRef; ref != nil && other(ref.Namespace) {
		return "spec.chartRef.namespace", ref.Namespace
	}
	if c := hr.Spec.Chart; c != nil && c.Spec.SourceRef != nil && other(c.Spec.SourceRef.Namespace) {
		return "spec.chart.spec.sourceRef.namespace", c.Spec.SourceRef.Namespace
	}
	for i, dep := range hr.Spec.DependsOn {
		if other(dep.Namespace) {
			return fmt.Sprintf("spec.dependsOn[%d].namespace", i), dep.Namespace
		}
	}
	return "", ""
}

// unsealedRecheck is how often a layer's HelmRelease waiting for its layer
// is looked at again: the layer's apply changes its seal annotation, which
// the watch sees first.
const unsealedRecheck = 5 * time.Minute
