package rollout

import (
	"fmt"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Strategy is how a wait judges its objects: Flux's spec.waitStrategy.name,
// whose values it takes.
type Strategy string

const (
	// StrategyLegacy is Helm 3's wait, the zero value: the caller hands the
	// kinds Helm 3 waits for (workloads, Pods, PVCs, LoadBalancer Services,
	// CRDs, Jobs with jobs), judged by kstatus, and a Failed object ends the
	// wait only with FailFast.
	StrategyLegacy Strategy = "legacy"
	// StrategyPoller is Helm 4's: the caller hands every object of the
	// release, custom resources included, each judged by kstatus (or by a
	// HealthCheckExpr of its kind): Current is ready, InProgress is waited
	// for, and Failed ends the wait at once with the object's message. A
	// custom resource with no status, or no conditions kstatus knows, is
	// Current as soon as it is seen; a CRD when it is Established.
	StrategyPoller Strategy = "poller"
)

// poller says whether s is StrategyPoller; anything else is legacy.
func (s Strategy) poller() bool { return s == StrategyPoller }

var jobKind = schema.GroupKind{Group: "batch", Kind: "Job"}

const rbacGroup = "rbac.authorization.k8s.io"

// completedJob judges a Job as Helm 4's WaitWithJobs does: ready only once
// Complete (kstatus says Current as soon as it started), Failed when it ran
// out of retries.
func completedJob(u *unstructured.Unstructured) (kstatus.Status, string) {
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conditions {
		cond, ok := c.(map[string]any)
		if !ok || cond["status"] != string(corev1.ConditionTrue) {
			continue
		}
		switch cond["type"] {
		case "Complete":
			return kstatus.CurrentStatus, "Job completed"
		case "Failed":
			failed, _, _ := unstructured.NestedInt64(u.Object, "status", "failed")
			return kstatus.FailedStatus, fmt.Sprintf("Job failed (%v), %d failed pods", cond["reason"], failed)
		}
	}
	return kstatus.InProgressStatus, "Job not complete"
}

// statusless are kinds that carry no status: kstatus says Current of them
// as soon as it sees them, and Helm has just applied them, so they are ready
// without watching them. Under the poller every object of a release comes,
// and a cluster-wide watch of every Helm Secret (its data in memory) or Role
// would be paid for nothing.
var statusless = map[schema.GroupKind]bool{
	{Kind: "ConfigMap"}:                                                             true,
	{Kind: "Secret"}:                                                                true,
	{Kind: "ServiceAccount"}:                                                        true,
	{Group: rbacGroup, Kind: "Role"}:                                                true,
	{Group: rbacGroup, Kind: "RoleBinding"}:                                         true,
	{Group: rbacGroup, Kind: "ClusterRole"}:                                         true,
	{Group: rbacGroup, Kind: "ClusterRoleBinding"}:                                  true,
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"}:                             true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                              true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                             true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                                 true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}: true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:   true,
}
