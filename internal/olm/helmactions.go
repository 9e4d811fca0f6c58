package olm

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Helm's release records are Secrets labelled owner=helm, name, version and
// status, and createdAt/modifiedAt (Unix seconds). An install, upgrade or
// rollback writes its record as pending-* when it starts and deployed,
// failed or superseded when it ends: a pending record is a Helm action in
// flight, of a HelmRelease or of a chart-backed object (Habitat) alike, and
// an operator replaced meanwhile would cut it.
const (
	helmOwnerLabel    = "owner"
	helmOwner         = "helm"
	helmStatusLabel   = "status"
	helmCreatedLabel  = "createdAt"
	helmModifiedLabel = "modifiedAt"
)

// pendingStatuses are the statuses of a record whose action runs.
var pendingStatuses = map[string]bool{"pending-install": true, "pending-upgrade": true, "pending-rollback": true}

// StalePendingAfter is how long a record may stay pending and still count as
// an action in flight. Every action ends within its timeout; a record pending
// for longer was left by a process that died (the operator unlocks such a
// release when it reconciles it next), and must not hold an upgrade forever
// — the upgrade may be what fixes it.
const StalePendingAfter = time.Hour

// helmActionsInFlight names the releases whose newest record is pending and
// was written less than StalePendingAfter before now ("namespace/name
// (pending-upgrade)", sorted), and how long until the youngest of them turns
// stale (0 when none is pending).
func helmActionsInFlight(records []metav1.PartialObjectMetadata, now time.Time) ([]string, time.Duration) {
	type newest struct {
		version int
		status  string
		written time.Time
	}
	releases := map[string]newest{}
	for i := range records {
		labels := records[i].Labels
		if labels[helmOwnerLabel] != helmOwner {
			continue
		}
		version, err := strconv.Atoi(labels["version"])
		if err != nil {
			continue
		}
		key := records[i].Namespace + "/" + labels["name"]
		if n, ok := releases[key]; ok && n.version > version {
			continue
		}
		releases[key] = newest{version: version, status: labels[helmStatusLabel], written: writtenAt(labels)}
	}
	var inFlight []string
	var staleIn time.Duration
	for key, n := range releases {
		if !pendingStatuses[n.status] {
			continue
		}
		left := n.written.Add(StalePendingAfter).Sub(now)
		if left <= 0 {
			continue
		}
		inFlight = append(inFlight, fmt.Sprintf("%s (%s)", key, n.status))
		if staleIn == 0 || left < staleIn {
			staleIn = left
		}
	}
	sort.Strings(inFlight)
	return inFlight, staleIn
}

// writtenAt is when a record was last written: modifiedAt, else createdAt.
// A record without either (not written by Helm's driver) counts as just
// written.
func writtenAt(labels map[string]string) time.Time {
	for _, l := range []string{helmModifiedLabel, helmCreatedLabel} {
		if s, err := strconv.ParseInt(labels[l], 10, 64); err == nil {
			return time.Unix(s, 0)
		}
	}
	return time.Now()
}

// listHelmRecords lists the release records' metadata: the manager caches
// Secrets as metadata only, which includes the labels read here.
func listHelmRecords(ctx context.Context, r client.Reader) ([]metav1.PartialObjectMetadata, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := r.List(ctx, list, client.MatchingLabels{helmOwnerLabel: helmOwner}); err != nil {
		return nil, fmt.Errorf("listing Helm release records: %w", err)
	}
	return list.Items, nil
}
