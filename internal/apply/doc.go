// Package apply puts a layer's objects on the cluster and takes them off again.
//
// Objects are applied server-side with one field manager (FieldManager) through
// fluxcd/pkg/ssa: namespaces, CRDs and cluster roles first (waiting for CRDs to
// be established), then class definitions, then everything else. Every object
// of a stage is dry-run before any is applied; the last stage's applies are sent
// kind by kind, the objects of one kind at once. An object whose
// immutable fields changed is recreated only when it carries ForceAnnotation.
//
// Ownership is a label (manifest.LayerLabel) rather than an ownerReference, so
// that deleting a layer never lets Kubernetes' garbage collector uninstall an
// add-on that another layer is about to adopt. The label marks an object, it
// does not prove who owns it: anyone who may edit the object may set it (a
// tenant, on the objects of its namespace). Ownership is proven by a layer's
// inventory (status.resources), which only the operator writes, on a
// cluster-scoped object. An object labelled for another layer whose inventory
// lists it is that layer's: applying it fails with an OwnershipConflictError
// naming both layers, unless the other layer released it. A label naming a
// layer that does not list the object blocks nothing, and nothing outside a
// layer's inventory is pruned, suspended or resumed for it.
//
// An error the API server returns for a Secret is rebuilt by
// redact.SecretError before anything else sees it (see secretGuard): the
// server quotes the value it refused.
//
// Hand-over works in two moves. A layer that no longer defines an object
// releases it: the object is annotated ReleasedAtAnnotation with the time.
// Another layer defining the same object may adopt a released object (its label
// is switched, the annotation removed); the object itself, and everything its
// controllers created, is untouched, so a Deployment keeps its UID. An object
// still released and not adopted after the grace period is deleted (Prune). An
// object annotated PruneAnnotation: disabled is never deleted.
//
// Health reports each object's readiness by kstatus, and kraan.io HelmReleases
// by their Ready condition at their current generation.
package apply
