package helmreleases_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// TestHelmRelease_TargetPathDeploysTheSecretByteForByte: a Secret value set
// with valuesFrom.targetPath reaches the cluster exactly as stored, commas,
// `key=value` look-alikes, newlines and all — nothing is parsed out of it.
func TestHelmRelease_TargetPathDeploysTheSecretByteForByte(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	newRepository(t, ns)
	value := "p@ss,word=1,replicaCount=5\n{not a list}\tünïcödé \\ end"
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "message", Namespace: ns},
		Data:       map[string][]byte{"text": []byte(value)},
	}
	g.Expect(k8s.Create(context.Background(), secret)).To(Succeed())
	newRelease(t, ns, "literal", "small", withVersion("0.1.0"), func(hr *kraanv1.HelmRelease) {
		hr.Spec.ValuesFrom = []kraanv1.ValuesReference{{Kind: "Secret", Name: "message", ValuesKey: "text", TargetPath: "message"}}
	})
	readyAt(t, ns, "literal")
	g.Expect(configMapData(g, ns, "literal")).To(HaveKeyWithValue("message", value))
	g.Expect(*deployment(g, ns, "literal").Spec.Replicas).To(Equal(int32(1)), "no key was injected")
}
