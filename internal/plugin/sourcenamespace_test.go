package plugin

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The plugin reads a layer's source where the operator reads it: the
// operator defaults --default-source-namespace to its own namespace, so a
// plugin defaulting to flux-system previewed another source, or none.
func TestSourceNamespaceOf_TheOperatorsSetting(t *testing.T) {
	operator := func(c corev1.Container) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kraan-system"},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{c}}}},
		}
	}
	tests := []struct {
		name      string
		container corev1.Container
		want      string
	}{
		{"no flag: the operator's namespace", corev1.Container{Args: []string{"--leader-elect"}}, "kraan-system"},
		{"flag=value", corev1.Container{Args: []string{"--default-source-namespace=gitops"}}, "gitops"},
		{"flag value", corev1.Container{Command: []string{"/manager", "--default-source-namespace", "sources"}}, "sources"},
		{"environment (OLM's config.env)", corev1.Container{Env: []corev1.EnvVar{{Name: "KRAAN_DEFAULT_SOURCE_NAMESPACE", Value: "olm-sources"}}}, "olm-sources"},
		{"the flag wins over the environment", corev1.Container{
			Args: []string{"--default-source-namespace=cli"},
			Env:  []corev1.EnvVar{{Name: "KRAAN_DEFAULT_SOURCE_NAMESPACE", Value: "env"}}}, "cli"},
		{"an empty flag value is not a namespace", corev1.Container{Args: []string{"--default-source-namespace="}}, "kraan-system"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(sourceNamespaceOf(operator(tt.container))).To(Equal(tt.want))
		})
	}
}

func TestDefaultSourceNamespace_TheFlagWins(t *testing.T) {
	NewWithT(t).Expect(defaultSourceNamespace(t.Context(), nil, "mine")).To(Equal("mine"))
}
