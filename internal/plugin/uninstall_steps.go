package plugin

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// protectedNamespaces are never deleted, whatever --delete-namespace says.
var protectedNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// stopOperator scales every Deployment of the operator to 0 and waits until
// their pods are gone: from then on no controller adds a finalizer back or
// acts on a deletion.
func (u *uninstallOptions) stopOperator(ctx context.Context, s *session, p *plan) error {
	if len(p.deployments) == 0 {
		u.note("no Deployment labelled %s=%s: make sure no operator runs elsewhere (make run, another cluster's kubeconfig)", operatorLabel, operatorName)
		return nil
	}
	u.progress("stopping the operator")
	for i := range p.deployments {
		d := &p.deployments[i]
		if !u.dryRun {
			base := d.DeepCopy()
			d.Spec.Replicas = ptr.To[int32](0)
			if err := s.client.Patch(ctx, d, client.MergeFrom(base)); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("scaling Deployment %s/%s to 0: %w", d.Namespace, d.Name, err)
			}
		}
		u.did("Deployment %s/%s scaled to 0", d.Namespace, d.Name)
	}
	for i := range p.deployments {
		d := &p.deployments[i]
		if err := u.poll(ctx, fmt.Sprintf("the pods of Deployment %s/%s to be gone", d.Namespace, d.Name), podsGone(s, d)); err != nil {
			return err
		}
	}
	return nil
}

// podsGone is done when no pod of d's selector is left, terminating ones
// included: a terminating operator may still be reconciling.
func podsGone(s *session, d *appsv1.Deployment) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil {
			return false, err
		}
		pods := &corev1.PodList{}
		if err := s.client.List(ctx, pods, client.InNamespace(d.Namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
			return false, err
		}
		return len(pods.Items) == 0, nil
	}
}

// removeFinalizers takes ourFinalizers off every custom resource, leaving
// any other finalizer in place.
func (u *uninstallOptions) removeFinalizers(ctx context.Context, s *session, p *plan) error {
	u.progress("removing the operator's finalizers from %d custom resources", len(p.resources))
	for i := range p.resources {
		obj := &p.resources[i]
		if _, ours := withoutOurFinalizers(obj.Finalizers); !ours {
			continue
		}
		if !u.dryRun {
			if err := removeOurFinalizers(ctx, s, obj); err != nil {
				return err
			}
		}
		u.did("finalizer removed from %s", describeMeta(obj))
		if obj.DeletionTimestamp != nil {
			u.note("%s was being deleted: it goes now and what it manages stays", describeMeta(obj))
		}
	}
	return nil
}

// removeOurFinalizers patches obj's finalizers, reading it again when
// someone else wrote it in between.
func removeOurFinalizers(ctx context.Context, s *session, obj *metav1.PartialObjectMetadata) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := s.client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		kept, ours := withoutOurFinalizers(obj.Finalizers)
		if !ours {
			return nil
		}
		base := obj.DeepCopy()
		obj.Finalizers = kept
		return s.client.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing the finalizers of %s: %w", describeMeta(obj), err)
	}
	return nil
}

// deleteOperatorObjects deletes the operator's Deployments, Services, RBAC
// and the rest of operatorKinds.
func (u *uninstallOptions) deleteOperatorObjects(ctx context.Context, s *session, p *plan) error {
	u.progress("deleting the operator's objects")
	for i := range p.objects {
		obj := &p.objects[i]
		if !u.dryRun {
			if err := s.client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting %s: %w", describeMeta(obj), err)
			}
		}
		u.did("%s deleted", describeMeta(obj))
	}
	return nil
}

// deleteCRDs is --crds: once no custom resource carries a finalizer of
// ours any more, it deletes each with propagation Orphan (the garbage
// collector removes owner references to it from what it owns, a Habitat's
// StatefulSet for one) and then the CRDs.
func (u *uninstallOptions) deleteCRDs(ctx context.Context, s *session, p *plan) error {
	if err := u.refuseWhileFinalized(ctx, s, p); err != nil {
		return err
	}
	u.progress("deleting %d custom resources with propagation Orphan", len(p.resources))
	for i := range p.resources {
		if err := u.deleteResource(ctx, s, &p.resources[i], true); err != nil {
			return err
		}
	}
	if err := u.waitResourcesGone(ctx, s, p); err != nil {
		return err
	}
	u.progress("deleting the operator's CRDs")
	for i := range p.crds {
		crd := &p.crds[i]
		if !u.dryRun {
			if err := s.client.Delete(ctx, crd); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting CustomResourceDefinition %s: %w", crd.Name, err)
			}
		}
		u.did("CustomResourceDefinition %s deleted", crd.Name)
	}
	return nil
}

// refuseWhileFinalized reads the custom resources again: a finalizer of
// ours back on one means an operator still runs somewhere, and deleting the
// CRDs would make it uninstall every release.
func (u *uninstallOptions) refuseWhileFinalized(ctx context.Context, s *session, p *plan) error {
	if u.dryRun {
		return nil
	}
	resources, err := listResources(ctx, s, p.crds)
	if err != nil {
		return err
	}
	for i := range resources {
		if _, ours := withoutOurFinalizers(resources[i].Finalizers); ours {
			return fmt.Errorf("%s has the operator's finalizer again: an operator still runs (outside a Deployment labelled %s=%s?); "+
				"stop it and run uninstall again; the CRDs were kept", describeMeta(&resources[i]), operatorLabel, operatorName)
		}
	}
	p.resources = resources
	return nil
}

// deleteResource deletes a custom resource; orphan keeps what it owns.
func (u *uninstallOptions) deleteResource(ctx context.Context, s *session, obj *metav1.PartialObjectMetadata, orphan bool) error {
	if !u.dryRun {
		var opts []client.DeleteOption
		if orphan {
			opts = append(opts, client.PropagationPolicy(metav1.DeletePropagationOrphan))
		}
		if err := s.client.Delete(ctx, obj, opts...); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting %s: %w", describeMeta(obj), err)
		}
	}
	u.did("%s deleted", describeMeta(obj))
	return nil
}

// waitResourcesGone waits until every custom resource of p is deleted.
func (u *uninstallOptions) waitResourcesGone(ctx context.Context, s *session, p *plan) error {
	return u.poll(ctx, "the custom resources to be deleted", func(ctx context.Context) (bool, error) {
		left, err := listResources(ctx, s, p.crds)
		return len(left) == 0, err
	})
}

// deleteNamespaces is --delete-namespace: it deletes the operator's
// namespaces, except one that holds custom resources or Helm release
// records, which would go with it.
func (u *uninstallOptions) deleteNamespaces(ctx context.Context, s *session, p *plan) error {
	u.progress("deleting the operator's namespaces")
	for _, ns := range p.namespaces {
		reason, err := namespaceKeptBecause(ctx, s, p, ns)
		if err != nil {
			return err
		}
		if reason != "" {
			u.note("namespace %s kept: %s", ns, reason)
			continue
		}
		if !u.dryRun {
			obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
			if err := s.client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting namespace %s: %w", ns, err)
			}
		}
		u.did("Namespace %s deleted (with the release record key Secret and the leader election Lease)", ns)
	}
	return nil
}

// namespaceKeptBecause says why namespace ns must not be deleted, or "".
func namespaceKeptBecause(ctx context.Context, s *session, p *plan, ns string) (string, error) {
	if slices.Contains(protectedNamespaces, ns) {
		return "it is a namespace of Kubernetes' own", nil
	}
	for i := range p.resources {
		if p.resources[i].Namespace == ns {
			return "it holds " + describeMeta(&p.resources[i]), nil
		}
	}
	records := &metav1.PartialObjectMetadataList{}
	records.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := s.client.List(ctx, records, client.InNamespace(ns), client.MatchingLabels{"owner": "helm"}, client.Limit(1)); err != nil {
		return "", fmt.Errorf("looking for Helm release records in namespace %s: %w", ns, err)
	}
	if len(records.Items) > 0 {
		return "it holds Helm release records (Secret " + records.Items[0].Name + ")", nil
	}
	return "", nil
}
