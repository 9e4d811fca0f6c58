package olm

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

func layer(name, state string) kraanv1.AddonsLayer {
	return kraanv1.AddonsLayer{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status:     kraanv1.AddonsLayerStatus{State: state},
	}
}

func TestUpgradeable(t *testing.T) {
	tests := []struct {
		name        string
		layers      []kraanv1.AddonsLayer
		actions     []string
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		{name: "no layers", wantStatus: metav1.ConditionTrue, wantReason: ReasonNoLayerInProgress,
			wantMessage: "No layer is being applied or pruned and no Helm action is running"},
		{name: "settled layers", layers: []kraanv1.AddonsLayer{
			layer("a", kraanv1.DeployedState), layer("b", kraanv1.ApplyPendingState), layer("c", kraanv1.HoldState),
			layer("d", kraanv1.FailedState), layer("e", ""),
		}, wantStatus: metav1.ConditionTrue, wantReason: ReasonNoLayerInProgress,
			wantMessage: "No layer is being applied or pruned and no Helm action is running"},
		{name: "one applying", layers: []kraanv1.AddonsLayer{
			layer("a", kraanv1.DeployedState), layer("b", kraanv1.ApplyingState),
		}, wantStatus: metav1.ConditionFalse, wantReason: ReasonLayersInProgress,
			wantMessage: "Layers are being applied or pruned: b (Applying)"},
		{name: "applying and pruning, sorted", layers: []kraanv1.AddonsLayer{
			layer("z", kraanv1.PruningState), layer("a", kraanv1.ApplyingState),
		}, wantStatus: metav1.ConditionFalse, wantReason: ReasonLayersInProgress,
			wantMessage: "Layers are being applied or pruned: a (Applying), z (Pruning)"},
		{name: "a Helm action", layers: []kraanv1.AddonsLayer{layer("a", kraanv1.DeployedState)},
			actions:    []string{"apps/web (pending-upgrade)"},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonHelmActionsInProgress,
			wantMessage: "Helm actions are running: apps/web (pending-upgrade)"},
		{name: "a layer and a Helm action", layers: []kraanv1.AddonsLayer{layer("a", kraanv1.ApplyingState)},
			actions:    []string{"apps/web (pending-install)"},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonLayersInProgress,
			wantMessage: "Layers are being applied or pruned: a (Applying); Helm actions are running: apps/web (pending-install)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := Upgradeable(tt.layers, tt.actions)
			g.Expect(got.Type).To(Equal("Upgradeable"))
			g.Expect(got.Status).To(Equal(tt.wantStatus))
			g.Expect(got.Reason).To(Equal(tt.wantReason))
			g.Expect(got.Message).To(Equal(tt.wantMessage))
		})
	}
}

func TestConditionKey_FallsBackToNamespaceOutsideAPod(t *testing.T) {
	g := NewWithT(t)
	t.Setenv(ConditionNameEnv, "kraan-operator.v0.1.0")
	g.Expect(RunningUnderOLM()).To(BeTrue())
	key, err := ConditionKey("operators")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(key.Name).To(Equal("kraan-operator.v0.1.0"))
	g.Expect(key.Namespace).To(Equal("operators"))

	_, err = ConditionKey("")
	g.Expect(err).To(HaveOccurred(), "without a namespace the OperatorCondition cannot be located")

	t.Setenv(ConditionNameEnv, "")
	g.Expect(RunningUnderOLM()).To(BeFalse())
}

// record is the metadata of a Helm release record as the manager caches it.
func record(namespace, name string, version int, status string, written time.Time) metav1.PartialObjectMetadata {
	return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: namespace, Name: fmt.Sprintf("sh.helm.release.v1.%s.v%d", name, version),
		Labels: map[string]string{"owner": "helm", "name": name, "version": strconv.Itoa(version), "status": status,
			"modifiedAt": strconv.FormatInt(written.Unix(), 10)},
	}}
}

func TestHelmActionsInFlight(t *testing.T) {
	g := NewWithT(t)
	now := time.Unix(1_800_000_000, 0)
	notHelm := record("apps", "x", 1, "pending-install", now)
	notHelm.Labels["owner"] = "someone-else"
	records := []metav1.PartialObjectMetadata{
		notHelm,
		record("apps", "web", 1, "superseded", now.Add(-2*time.Hour)),
		record("apps", "web", 2, "pending-upgrade", now.Add(-10*time.Minute)), // newest: running
		record("apps", "db", 1, "pending-install", now.Add(-2*time.Hour)),     // left by a dead process
		record("apps", "db", 2, "deployed", now.Add(-time.Hour)),              // newer record: done
		record("apps", "cache", 3, "pending-rollback", now.Add(-30*time.Minute)),
		record("other", "web", 1, "deployed", now),
		record("apps", "stuck", 1, "pending-install", now.Add(-StalePendingAfter)), // stale now
	}
	inFlight, staleIn := helmActionsInFlight(records, now)
	g.Expect(inFlight).To(Equal([]string{"apps/cache (pending-rollback)", "apps/web (pending-upgrade)"}))
	g.Expect(staleIn).To(Equal(30*time.Minute), "when the older pending record turns stale, look again")

	inFlight, staleIn = helmActionsInFlight(records[:2], now)
	g.Expect(inFlight).To(BeEmpty())
	g.Expect(staleIn).To(BeZero())
}
