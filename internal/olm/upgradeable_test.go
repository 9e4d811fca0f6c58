package olm

import (
	"testing"

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
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		{name: "no layers", wantStatus: metav1.ConditionTrue, wantReason: ReasonNoLayerInProgress,
			wantMessage: "No layer is being applied or pruned"},
		{name: "settled layers", layers: []kraanv1.AddonsLayer{
			layer("a", kraanv1.DeployedState), layer("b", kraanv1.ApplyPendingState), layer("c", kraanv1.HoldState),
			layer("d", kraanv1.FailedState), layer("e", ""),
		}, wantStatus: metav1.ConditionTrue, wantReason: ReasonNoLayerInProgress,
			wantMessage: "No layer is being applied or pruned"},
		{name: "one applying", layers: []kraanv1.AddonsLayer{
			layer("a", kraanv1.DeployedState), layer("b", kraanv1.ApplyingState),
		}, wantStatus: metav1.ConditionFalse, wantReason: ReasonLayersInProgress,
			wantMessage: "Layers are being applied or pruned: b (Applying)"},
		{name: "applying and pruning, sorted", layers: []kraanv1.AddonsLayer{
			layer("z", kraanv1.PruningState), layer("a", kraanv1.ApplyingState),
		}, wantStatus: metav1.ConditionFalse, wantReason: ReasonLayersInProgress,
			wantMessage: "Layers are being applied or pruned: a (Applying), z (Pruning)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := Upgradeable(tt.layers)
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
