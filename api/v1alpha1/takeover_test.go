package v1alpha1

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAwaitsTakeOver(t *testing.T) {
	kraans := AddonsLayerStatus{State: DeployedState, Version: "0.1.0",
		Conditions: []metav1.Condition{{Type: DeployedState, Status: metav1.ConditionTrue, Reason: DeployedState}}}
	ours := AddonsLayerStatus{State: DeployedState, Version: "0.1.0",
		Conditions: []metav1.Condition{{Type: ReadyCondition, Status: metav1.ConditionTrue, Reason: "Deployed"}}}
	for name, c := range map[string]struct {
		layer AddonsLayer
		want  bool
	}{
		"Kraan's status":                          {AddonsLayer{Status: kraans}, true},
		"Kraan's state without a condition":       {AddonsLayer{Status: AddonsLayerStatus{State: PendingState}}, true},
		"Kraan's status with Kraan's finalizer":   {AddonsLayer{ObjectMeta: metav1.ObjectMeta{Finalizers: []string{Finalizer}}, Status: kraans}, true},
		"Kraan's status, taken over":              {AddonsLayer{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{TakeOverAnnotation: "2026-12-03T00:00:00Z"}}, Status: kraans}, false},
		"the operator's status":                   {AddonsLayer{Status: ours}, false},
		"a new layer":                             {AddonsLayer{}, false},
		"the finalizer and no status (a restart)": {AddonsLayer{ObjectMeta: metav1.ObjectMeta{Finalizers: []string{Finalizer}}}, false},
	} {
		NewWithT(t).Expect(c.layer.AwaitsTakeOver()).To(Equal(c.want), name)
	}
}
