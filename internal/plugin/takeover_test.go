package plugin

import (
	"bytes"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

func layerDependingOn(name string, deps ...string) *kraanv1.AddonsLayer {
	return &kraanv1.AddonsLayer{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kraanv1.AddonsLayerSpec{Prereqs: kraanv1.PrereqsSpec{DependsOn: deps}}}
}

func TestDependenciesFirst(t *testing.T) {
	names := func(ls []*kraanv1.AddonsLayer) []string {
		out := make([]string, 0, len(ls))
		for _, l := range ls {
			out = append(out, l.Name)
		}
		return out
	}
	g := NewWithT(t)
	// apps needs base and mgmt; mgmt needs bootstrap; base needs one that
	// is not taken over (outside the list); a and b depend on each other.
	got := dependenciesFirst([]*kraanv1.AddonsLayer{
		layerDependingOn("apps", "base@0.1.0", "mgmt@0.1.0"),
		layerDependingOn("mgmt", "bootstrap@0.1.0"),
		layerDependingOn("base", "elsewhere@1"),
		layerDependingOn("bootstrap"),
		layerDependingOn("x-a", "x-b@1"),
		layerDependingOn("x-b", "x-a@1"),
	})
	g.Expect(names(got)).To(Equal([]string{"base", "bootstrap", "mgmt", "apps", "x-b", "x-a"}))
}

func TestRunsPreviousController(t *testing.T) {
	deployment := func(image string) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "manager", Image: image}}
		return d
	}
	for image, want := range map[string]bool{
		"docker.pkg.github.com/fidelity/kraan/kraan-controller:v0.3.3":   true,
		"ghcr.io/fluxcd/helm-controller:v1.4.5":                          true,
		"ghcr.io/fluxcd/helm-controller@sha256:0123":                     true,
		"localhost:5000/fluxcd/helm-controller":                          true,
		"ghcr.io/kraan-io/kraan-operator:v0.2.0":                         false,
		"ghcr.io/fluxcd/source-controller:v1.9.6":                        false,
		"registry.example.com:5000/team/helm-controller-dashboard:1.0.0": false,
	} {
		NewWithT(t).Expect(runsPreviousController(deployment(image))).To(Equal(want), image)
	}
}

// TestRefuseWhileRunning: a controller with replicas refuses the take-over,
// naming the command that stops it; one scaled to 0 whose pods are still
// stopping is waited for (here with no time left, so it says so); other
// Deployments do not matter.
func TestRefuseWhileRunning(t *testing.T) {
	deployment := func(name, image string, replicas, podsLeft int32) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "gotk-system"}}
		d.Spec.Replicas = &replicas
		d.Status.Replicas = podsLeft
		d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "manager", Image: image}}
		return d
	}
	session := func(objs ...client.Object) *session {
		return &session{client: fake.NewClientBuilder().WithObjects(objs...).Build()}
	}
	g := NewWithT(t)
	var out bytes.Buffer
	err := refuseWhileRunning(t.Context(), session(
		deployment("kraan-controller", "kraan-controller:v0.3.52", 1, 1),
		deployment("helm-controller", "ghcr.io/fluxcd/helm-controller:v1.4.5", 0, 1),
		deployment("source-controller", "ghcr.io/fluxcd/source-controller:v1.7.4", 1, 1),
	), &out, time.Minute)
	g.Expect(err).To(MatchError(ContainSubstring("stop it first (kubectl scale deployment kraan-controller -n gotk-system --replicas=0)")))

	err = refuseWhileRunning(t.Context(), session(
		deployment("kraan-controller", "kraan-controller:v0.3.52", 0, 0),
		deployment("helm-controller", "ghcr.io/fluxcd/helm-controller:v1.4.5", 0, 1),
	), &out, 0)
	g.Expect(err).To(MatchError(ContainSubstring("the pods of gotk-system/helm-controller, scaled to 0, still run")))

	g.Expect(refuseWhileRunning(t.Context(), session(
		deployment("kraan-controller", "kraan-controller:v0.3.52", 0, 0),
		deployment("source-controller", "ghcr.io/fluxcd/source-controller:v1.7.4", 1, 1),
	), &out, 0)).To(Succeed())
}
