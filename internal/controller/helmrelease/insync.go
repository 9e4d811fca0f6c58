package helmrelease

import (
	"context"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/releasespec"
)

// inSync says, from the cache of Secret metadata the operator keeps anyway,
// whether the newest record of the release in Helm storage is deployed from
// the desired chart, values and post-renderers and status already says so:
// an idle resync then costs no Helm action, and no LIST of release Secrets.
// Anything it cannot vouch for (a remote cluster, tests or drift detection to
// run, a pending force request, a generation not yet handled, a status
// written before status.inventory existed) gets a full run.
func (r *Reconciler) inSync(ctx context.Context, sc *releaseScope) bool {
	hr := sc.hr
	s := &hr.Status
	dd := hr.Spec.DriftDetection
	switch {
	case dd != nil && dd.Mode != "" && dd.Mode != kraanv1.DriftDetectionDisabled,
		s.ObservedGeneration != hr.Generation || s.LastAttemptedGeneration != hr.Generation,
		!isReady(hr), len(s.History) == 0, s.Inventory == nil,
		s.LastAttemptedValuesChecksum != attemptDigest(sc.desired),
		requestPending(hr, forceAtAnnotation, s.LastHandledForceAt),
		requestPending(hr, resetAtAnnotation, s.LastHandledResetAt),
		releasespec.PolicyOf(&hr.Spec).TestEnable && s.History[0].TestResult == "":
		return false
	}
	latest, version, ok := r.cachedRecords(ctx, sc.target)
	return ok && latest != nil && int64(version) == int64(s.History[0].Version) &&
		latest["status"] == "deployed" && latest[helm.InterruptedLabel] == "" && sc.desired.MatchesLabels(latest)
}

// cachedRecords reads the labels of the newest record of the release in Helm
// storage, and its version, from the cache of Secret metadata; ok is false
// when the cache cannot say (a remote cluster, or a storage namespace outside
// --watch-namespace), latest nil when there is no record.
func (r *Reconciler) cachedRecords(ctx context.Context, target helm.Target) (latest map[string]string, version int, ok bool) {
	if target.Cluster != nil {
		return nil, 0, false
	}
	records := &metav1.PartialObjectMetadataList{}
	records.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := r.List(ctx, records, client.InNamespace(target.StorageNamespace),
		client.MatchingFields{helmRecordIndex: target.ReleaseName}); err != nil {
		return nil, 0, false
	}
	version = -1
	for _, rec := range records.Items {
		if v, err := strconv.Atoi(rec.Labels["version"]); err == nil && v > version {
			version, latest = v, rec.Labels
		}
	}
	return latest, version, true
}

// requestPending says whether the request in annotation (forceAt, resetAt)
// has not been handled yet; handleRequest handles it.
func requestPending(hr *kraanv1.HelmRelease, annotation, lastHandled string) bool {
	value, ok := hr.Annotations[annotation]
	return ok && value == hr.Annotations[requestedAtAnnotation] && value != lastHandled
}
