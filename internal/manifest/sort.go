package manifest

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// API groups named more than once below.
const (
	groupApps       = "apps"
	groupBatch      = "batch"
	groupRBAC       = "rbac.authorization.k8s.io"
	groupNetworking = "networking.k8s.io"
	groupAdmission  = "admissionregistration.k8s.io"
)

// firstKinds are built-in kinds in apply order, like Helm's install order and
// Flux's ssa.ReconcileOrder: what others live in (Namespace) or are typed by
// (CustomResourceDefinition) first, then cluster-wide classes, identities and
// permissions, configuration, storage, services and finally workloads, so each
// object's references exist when it is applied. Keyed by group and kind, so a
// custom resource named like a built-in (Knative's serving.knative.dev Service)
// is not mistaken for one.
var firstKinds = []schema.GroupKind{
	{Kind: "Namespace"},
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"},
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"},
	{Group: "node.k8s.io", Kind: "RuntimeClass"},
	{Group: "storage.k8s.io", Kind: "StorageClass"},
	{Group: groupNetworking, Kind: "IngressClass"},
	{Kind: "ResourceQuota"},
	{Kind: "LimitRange"},
	{Group: groupNetworking, Kind: "NetworkPolicy"},
	{Kind: "ServiceAccount"},
	{Group: groupRBAC, Kind: "ClusterRole"},
	{Group: groupRBAC, Kind: "ClusterRoleBinding"},
	{Group: groupRBAC, Kind: "Role"},
	{Group: groupRBAC, Kind: "RoleBinding"},
	{Kind: "Secret"},
	{Kind: "ConfigMap"},
	{Kind: "PersistentVolume"},
	{Kind: "PersistentVolumeClaim"},
	{Kind: "Service"},
	{Group: groupApps, Kind: "DaemonSet"},
	{Kind: "Pod"},
	{Kind: "ReplicationController"},
	{Group: groupApps, Kind: "ReplicaSet"},
	{Group: groupApps, Kind: "Deployment"},
	{Group: groupApps, Kind: "StatefulSet"},
	{Group: groupBatch, Kind: "Job"},
	{Group: groupBatch, Kind: "CronJob"},
	{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"},
	{Group: "policy", Kind: "PodDisruptionBudget"},
	{Group: groupNetworking, Kind: "Ingress"},
}

// lastBuiltInKinds come after every other built-in kind: an API service or an
// admission webhook whose backend is not running yet would make the API server
// reject the objects applied after it.
var lastBuiltInKinds = []schema.GroupKind{
	{Group: "apiregistration.k8s.io", Kind: "APIService"},
	{Group: groupAdmission, Kind: "MutatingWebhookConfiguration"},
	{Group: groupAdmission, Kind: "ValidatingWebhookConfiguration"},
	{Group: groupAdmission, Kind: "ValidatingAdmissionPolicy"},
	{Group: groupAdmission, Kind: "ValidatingAdmissionPolicyBinding"},
}

// builtInGroups are the API groups served by kube-apiserver itself. Kinds of
// other groups are custom resources.
var builtInGroups = map[string]bool{
	"": true, groupApps: true, groupBatch: true, "autoscaling": true, "policy": true, "extensions": true,
	groupNetworking: true, groupRBAC: true, "storage.k8s.io": true,
	"apiextensions.k8s.io": true, groupAdmission: true, "apiregistration.k8s.io": true,
	"scheduling.k8s.io": true, "coordination.k8s.io": true, "discovery.k8s.io": true, "node.k8s.io": true,
	"certificates.k8s.io": true, "events.k8s.io": true, "flowcontrol.apiserver.k8s.io": true,
	"resource.k8s.io": true, "storagemigration.k8s.io": true, "internal.apiserver.k8s.io": true,
	"authentication.k8s.io": true, "authorization.k8s.io": true,
}

// kindRanks maps a group and kind to its place in the apply order; built-in
// kinds not listed go between firstKinds and lastBuiltInKinds.
var kindRanks, otherBuiltInRank, customRank = func() (map[schema.GroupKind]int, int, int) {
	ranks := make(map[schema.GroupKind]int, len(firstKinds)+len(lastBuiltInKinds))
	for i, gk := range firstKinds {
		ranks[gk] = i
	}
	other := len(firstKinds)
	for i, gk := range lastBuiltInKinds {
		ranks[gk] = other + 1 + i
	}
	return ranks, other, other + 1 + len(lastBuiltInKinds)
}()

func rank(gk schema.GroupKind) int {
	if r, ok := kindRanks[gk]; ok {
		return r
	}
	if builtInGroups[gk.Group] {
		return otherBuiltInRank
	}
	return customRank
}

// SortForApply sorts objs, in place, into the order they should be applied in:
// Namespaces and CustomResourceDefinitions first, then the built-in kinds in
// dependency order, then custom resources (HelmReleases among them) last, since
// they need their CRDs and usually reference Secrets, ConfigMaps and Namespaces.
// Ties are broken by group, kind, namespace and name, so the order depends only
// on the set of objects, not on the files they came from.
func SortForApply(objs []*unstructured.Unstructured) {
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
		ga, gb := a.GroupVersionKind().GroupKind(), b.GroupVersionKind().GroupKind()
		return cmp.Or(
			cmp.Compare(rank(ga), rank(gb)),
			cmp.Compare(ga.Group, gb.Group),
			cmp.Compare(ga.Kind, gb.Kind),
			cmp.Compare(a.GetNamespace(), b.GetNamespace()),
			cmp.Compare(a.GetName(), b.GetName()),
		)
	})
}
