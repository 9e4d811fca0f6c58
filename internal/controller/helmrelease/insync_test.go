package helmrelease

import (
	"context"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/helm"
)

// inSyncCase builds a release that is in sync, lets the case spoil one thing,
// and says whether inSync must still vouch for it.
type inSyncCase struct {
	name   string
	spoil  func(hr *kraanv1.HelmRelease, records []*corev1.Secret, sc *releaseScope)
	inSync bool
}

// TestInSync_OnlyVouchesForWhatTheCacheShows: an idle resync skips Helm only
// when the newest release record is deployed from the desired chart, values
// and post-renderers, status agrees, and nothing else asks for a run.
func TestInSync_OnlyVouchesForWhatTheCacheShows(t *testing.T) {
	cases := []inSyncCase{
		{name: "in sync", spoil: func(*kraanv1.HelmRelease, []*corev1.Secret, *releaseScope) {}, inSync: true},
		{name: "newest record failed", spoil: func(_ *kraanv1.HelmRelease, r []*corev1.Secret, _ *releaseScope) {
			r[1].Labels["status"] = "failed"
		}},
		{name: "newest record pending", spoil: func(_ *kraanv1.HelmRelease, r []*corev1.Secret, _ *releaseScope) {
			r[1].Labels["status"] = "pending-upgrade"
		}},
		{name: "values changed", spoil: func(_ *kraanv1.HelmRelease, _ []*corev1.Secret, sc *releaseScope) {
			sc.desired.Values = map[string]any{"message": "two"}
		}},
		{name: "chart changed", spoil: func(_ *kraanv1.HelmRelease, r []*corev1.Secret, _ *releaseScope) {
			r[1].Labels[helm.ChartDigestLabel] = strings.Repeat("0", 32)
		}},
		{name: "a newer record than status knows", spoil: func(hr *kraanv1.HelmRelease, _ []*corev1.Secret, _ *releaseScope) {
			hr.Status.History[0].Version = 1
		}},
		{name: "a new generation", spoil: func(hr *kraanv1.HelmRelease, _ []*corev1.Secret, _ *releaseScope) {
			hr.Generation = 3
		}},
		{name: "not Ready", spoil: func(hr *kraanv1.HelmRelease, _ []*corev1.Secret, _ *releaseScope) {
			hr.Status.Conditions[0].Status = metav1.ConditionFalse
		}},
		{name: "a force request", spoil: func(hr *kraanv1.HelmRelease, _ []*corev1.Secret, _ *releaseScope) {
			hr.Annotations = map[string]string{requestedAtAnnotation: "now", forceAtAnnotation: "now"}
		}},
		{name: "tests to run", spoil: func(hr *kraanv1.HelmRelease, _ []*corev1.Secret, _ *releaseScope) {
			hr.Spec.Test = &kraanv1.Test{Enable: true}
		}},
		{name: "drift detection", spoil: func(hr *kraanv1.HelmRelease, _ []*corev1.Secret, _ *releaseScope) {
			hr.Spec.DriftDetection = &kraanv1.DriftDetection{Mode: kraanv1.DriftDetectionWarn}
		}},
		{name: "status written before status.inventory existed", spoil: func(hr *kraanv1.HelmRelease, _ []*corev1.Secret, _ *releaseScope) {
			hr.Status.Inventory = nil
		}},
		{name: "a remote cluster", spoil: func(_ *kraanv1.HelmRelease, _ []*corev1.Secret, sc *releaseScope) {
			sc.target.Cluster = &helm.Cluster{}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hr, records, sc := syncedRelease()
			tc.spoil(hr, records, sc)
			r := &Reconciler{Client: fakeWith(records)}
			NewWithT(t).Expect(r.inSync(context.Background(), sc)).To(Equal(tc.inSync))
		})
	}
}

// syncedRelease is a release whose revision 2 is deployed from its desired
// state, revision 1 superseded.
func syncedRelease() (*kraanv1.HelmRelease, []*corev1.Secret, *releaseScope) {
	desired := helm.Desired{ChartDigest: "sha256:" + strings.Repeat("ab", 32), Values: map[string]any{"message": "one"}}
	hr := &kraanv1.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "ns", Generation: 2}}
	hr.Status.ObservedGeneration, hr.Status.LastAttemptedGeneration = 2, 2
	hr.Status.LastAttemptedValuesChecksum = attemptDigest(desired)
	hr.Status.History = []kraanv1.Snapshot{{Version: 2, Status: "deployed"}}
	hr.Status.Inventory = &kraanv1.ResourceInventory{Entries: []kraanv1.ResourceRef{}}
	hr.Status.Conditions = []metav1.Condition{{Type: kraanv1.ReadyCondition, Status: metav1.ConditionTrue, ObservedGeneration: 2}}
	records := []*corev1.Secret{record(1, "superseded", nil), record(2, "deployed", map[string]string{
		helm.ChartDigestLabel:  strings.Repeat("ab", 16),
		helm.ValuesDigestLabel: strings.TrimPrefix(helm.ValuesDigest(desired.Values), "sha256:")[:32],
	})}
	sc := &releaseScope{hr: hr, desired: desired, target: helm.Target{ReleaseName: "app", Namespace: "ns", StorageNamespace: "ns"}}
	return hr, records, sc
}

func record(version int, status string, extra map[string]string) *corev1.Secret {
	labels := map[string]string{"owner": "helm", "name": "app", "version": strconv.Itoa(version), "status": status}
	for k, v := range extra {
		labels[k] = v
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Name: "sh.helm.release.v1.app.v" + strconv.Itoa(version), Namespace: "ns", Labels: labels,
	}}
}

func fakeWith(records []*corev1.Secret) client.Client {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	objs := make([]client.Object, 0, len(records))
	for _, r := range records {
		objs = append(objs, r)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithIndex(&corev1.Secret{}, helmRecordIndex, helmRecordKeys).Build()
}
