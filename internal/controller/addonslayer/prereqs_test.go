package addonslayer

import (
	"testing"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// TestDependencyStateChanged: a dependent is woken by the changes of a layer
// its prerequisite check reads, and by no other.
func TestDependencyStateChanged(t *testing.T) {
	base := func() *kraanv1.AddonsLayer {
		l := &kraanv1.AddonsLayer{ObjectMeta: metav1.ObjectMeta{Name: "base", Generation: 2}}
		l.Spec.Version = "1.0.0"
		l.Status = kraanv1.AddonsLayerStatus{State: kraanv1.ApplyingState, Version: "1.0.0", Revision: "main@sha1:1", ObservedGeneration: 2}
		setDeployed(l, metav1.ConditionFalse, "waiting for HelmRelease base/a")
		return l
	}
	cases := map[string]struct {
		change func(l *kraanv1.AddonsLayer)
		wakes  bool
	}{
		"an object's health, in the inventory": {func(l *kraanv1.AddonsLayer) {
			l.Status.Resources = []kraanv1.Resource{{Kind: "HelmRelease", Name: "a", Status: kraanv1.DeployedState}}
		}, false},
		"the message of the Deployed condition": {func(l *kraanv1.AddonsLayer) {
			setDeployed(l, metav1.ConditionFalse, "waiting for HelmRelease base/b")
		}, false},
		"the Deployed condition":       {func(l *kraanv1.AddonsLayer) { setDeployed(l, metav1.ConditionTrue, "deployed") }, true},
		"the state":                    {func(l *kraanv1.AddonsLayer) { l.Status.State = kraanv1.DeployedState }, true},
		"the deployed version":         {func(l *kraanv1.AddonsLayer) { l.Status.Version = "1.1.0" }, true},
		"the deployed revision":        {func(l *kraanv1.AddonsLayer) { l.Status.Revision = "main@sha1:2" }, true},
		"the observed generation":      {func(l *kraanv1.AddonsLayer) { l.Status.ObservedGeneration = 1 }, true},
		"the spec (generation)":        {func(l *kraanv1.AddonsLayer) { l.Generation = 3 }, true},
		"the spec version, unobserved": {func(l *kraanv1.AddonsLayer) { l.Spec.Version = "1.1.0" }, true},
	}
	p := dependencyStateChanged()
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			after := base()
			c.change(after)
			NewWithT(t).Expect(p.Update(event.UpdateEvent{ObjectOld: base(), ObjectNew: after})).To(Equal(c.wakes))
		})
	}
	g := NewWithT(t)
	g.Expect(p.Create(event.CreateEvent{Object: base()})).To(BeTrue(), "a dependency created is news")
	g.Expect(p.Delete(event.DeleteEvent{Object: base()})).To(BeTrue(), "a dependency deleted is news")
}

func setDeployed(l *kraanv1.AddonsLayer, status metav1.ConditionStatus, message string) {
	apimeta.SetStatusCondition(&l.Status.Conditions, metav1.Condition{
		Type: kraanv1.DeployedCondition, Status: status, Reason: "Test", Message: message,
	})
}
