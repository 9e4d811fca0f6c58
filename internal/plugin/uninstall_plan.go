package plugin

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// The label every object of the operator's installation carries, whether
// config/default (kustomize's labels), dist/chart or the OLM bundle's CSV
// installed it.
const (
	operatorLabel = "app.kubernetes.io/name"
	operatorName  = "kraan-operator"
)

// ourFinalizers are the finalizers the operator's controllers put on custom
// resources: removing them is what keeps a deletion from uninstalling.
// Kraan's finalizer has the same name as the layers' and goes with it.
var ourFinalizers = []string{kraanv1.Finalizer, kraanv1.ChartFinalizer}

// operatorKinds are the kinds of the operator's installation uninstall
// deletes, found by operatorLabel, Deployments first. Kinds whose API the
// cluster does not serve (ServiceMonitor, cert-manager) are skipped.
var operatorKinds = []schema.GroupVersionKind{
	appsv1.SchemeGroupVersion.WithKind("Deployment"),
	{Version: "v1", Kind: "Service"},
	{Version: "v1", Kind: "ServiceAccount"},
	rbacv1.SchemeGroupVersion.WithKind("RoleBinding"),
	rbacv1.SchemeGroupVersion.WithKind("Role"),
	rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"),
	rbacv1.SchemeGroupVersion.WithKind("ClusterRole"),
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingWebhookConfiguration"},
	{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"},
	{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"},
	{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"},
	{Group: "cert-manager.io", Version: "v1", Kind: "Issuer"},
}

// plan is what uninstall found in the cluster before it changes anything.
type plan struct {
	// deployments run the operator (several with shards).
	deployments []appsv1.Deployment
	// objects are every object of operatorKinds with operatorLabel,
	// Deployments included, in deletion order.
	objects []metav1.PartialObjectMetadata
	// crds are the operator's CRDs (ownedCRD).
	crds []apiextensionsv1.CustomResourceDefinition
	// resources are the custom resources of crds, in every namespace.
	resources []metav1.PartialObjectMetadata
	// namespaces the operator was installed in: those of its Deployments
	// and the Namespaces carrying operatorLabel.
	namespaces []string
}

// discover reads the operator's installation: its Deployments and other
// objects (in namespace, or every namespace when empty), its CRDs and their
// custom resources.
func discover(ctx context.Context, s *session, namespace string) (*plan, error) {
	p := &plan{}
	deployments := &appsv1.DeploymentList{}
	if err := s.client.List(ctx, deployments, client.InNamespace(namespace), client.MatchingLabels{operatorLabel: operatorName}); err != nil {
		return nil, fmt.Errorf("listing the operator's Deployments: %w", err)
	}
	p.deployments = deployments.Items
	var err error
	if p.objects, err = listOperatorObjects(ctx, s, namespace); err != nil {
		return nil, err
	}
	if p.crds, err = listOwnedCRDs(ctx, s); err != nil {
		return nil, err
	}
	if p.resources, err = listResources(ctx, s, p.crds); err != nil {
		return nil, err
	}
	p.namespaces, err = operatorNamespaces(ctx, s, p.deployments)
	return p, err
}

// listOperatorObjects lists operatorKinds by operatorLabel.
func listOperatorObjects(ctx context.Context, s *session, namespace string) ([]metav1.PartialObjectMetadata, error) {
	var objects []metav1.PartialObjectMetadata
	for _, gvk := range operatorKinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		err := s.client.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{operatorLabel: operatorName})
		switch {
		case meta.IsNoMatchError(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("listing the operator's %ss: %w", gvk.Kind, err)
		}
		for _, obj := range list.Items {
			obj.SetGroupVersionKind(gvk)
			objects = append(objects, obj)
		}
	}
	return objects, nil
}

// listOwnedCRDs lists the CRDs ownedCRD selects.
func listOwnedCRDs(ctx context.Context, s *session) ([]apiextensionsv1.CustomResourceDefinition, error) {
	all := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := s.client.List(ctx, all); err != nil {
		return nil, fmt.Errorf("listing CRDs: %w", err)
	}
	var owned []apiextensionsv1.CustomResourceDefinition
	for _, crd := range all.Items {
		if ownedCRD(&crd) {
			owned = append(owned, crd)
		}
	}
	return owned, nil
}

// ownedCRD says whether crd is one of the operator's: its group is
// kraan.io or a subgroup of it (habitat.kraan.io), or it carries
// operatorLabel, as a chart-backed kind of another group should.
func ownedCRD(crd *apiextensionsv1.CustomResourceDefinition) bool {
	group := kraanv1.GroupVersion.Group
	return crd.Spec.Group == group || strings.HasSuffix(crd.Spec.Group, "."+group) ||
		crd.Labels[operatorLabel] == operatorName
}

// listResources lists the custom resources of crds, in every namespace.
func listResources(ctx context.Context, s *session, crds []apiextensionsv1.CustomResourceDefinition) ([]metav1.PartialObjectMetadata, error) {
	var resources []metav1.PartialObjectMetadata
	for i := range crds {
		gvk := storedKind(&crds[i])
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := s.client.List(ctx, list); err != nil {
			return nil, fmt.Errorf("listing %s: %w", crds[i].Name, err)
		}
		for _, obj := range list.Items {
			obj.SetGroupVersionKind(gvk)
			resources = append(resources, obj)
		}
	}
	return resources, nil
}

// storedKind is the CRD's kind at its storage version.
func storedKind(crd *apiextensionsv1.CustomResourceDefinition) schema.GroupVersionKind {
	version := crd.Spec.Versions[0].Name
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			version = v.Name
		}
	}
	return schema.GroupVersionKind{Group: crd.Spec.Group, Version: version, Kind: crd.Spec.Names.Kind}
}

// operatorNamespaces are the namespaces of deployments and the Namespaces
// labelled as the operator's (config/default's kraan-system).
func operatorNamespaces(ctx context.Context, s *session, deployments []appsv1.Deployment) ([]string, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "NamespaceList"})
	if err := s.client.List(ctx, list, client.MatchingLabels{operatorLabel: operatorName}); err != nil {
		return nil, fmt.Errorf("listing the operator's Namespaces: %w", err)
	}
	var names []string
	for _, ns := range list.Items {
		names = append(names, ns.Name)
	}
	for _, d := range deployments {
		names = append(names, d.Namespace)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// refuseOLM stops uninstall when OLM manages the operator: OLM would
// create again whatever uninstall deletes, and a running operator would put
// the finalizers back.
func (p *plan) refuseOLM() error {
	for _, d := range p.deployments {
		if csv := olmOwner(&d); csv != "" {
			return fmt.Errorf("the operator's Deployment %s/%s belongs to OLM's ClusterServiceVersion %s: delete its Subscription and ClusterServiceVersion first "+
				"(the CRDs stay), then run `kubectl kraan uninstall` again to remove the finalizers; see docs/operations.md#removing-the-operator",
				d.Namespace, d.Name, csv)
		}
	}
	return nil
}

// olmOwner is the name of the ClusterServiceVersion that owns d, or "".
func olmOwner(d *appsv1.Deployment) string {
	for _, ref := range d.OwnerReferences {
		if ref.Kind == "ClusterServiceVersion" {
			return ref.Name
		}
	}
	if d.Labels["olm.owner.kind"] == "ClusterServiceVersion" {
		return d.Labels["olm.owner"]
	}
	return ""
}

// operatorRunning says whether some Deployment of the operator has a
// ready replica.
func (p *plan) operatorRunning() bool {
	return slices.ContainsFunc(p.deployments, func(d appsv1.Deployment) bool { return d.Status.ReadyReplicas > 0 })
}

// withoutOurFinalizers returns finalizers without ourFinalizers, and
// whether there was one to remove.
func withoutOurFinalizers(finalizers []string) ([]string, bool) {
	kept := slices.DeleteFunc(slices.Clone(finalizers), func(f string) bool { return slices.Contains(ourFinalizers, f) })
	return kept, len(kept) != len(finalizers)
}

// describeMeta names an object as the output does: Kind namespace/name.
func describeMeta(obj *metav1.PartialObjectMetadata) string {
	if obj.Namespace == "" {
		return obj.Kind + " " + obj.Name
	}
	return obj.Kind + " " + obj.Namespace + "/" + obj.Name
}

// finalizerList is ourFinalizers for the help text.
func finalizerList() string { return strings.Join(ourFinalizers, ", ") }
