package tenancy

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/manifest"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

var testKey = []byte("a-record-key-of-enough-bytes-0123")

// layerHelmRelease is a HelmRelease as a layer's source holds it: few
// fields set, the API server's defaults (interval, maxHistory, the chart's
// reconcileStrategy and version, …) left to fill in, values of every JSON
// type.
const layerHelmRelease = `
apiVersion: kraan.io/v1alpha1
kind: HelmRelease
metadata:
  name: ingress
  namespace: team-a
  labels:
    kraan.io/layer: platform
spec:
  chart:
    spec:
      chart: ingress
      sourceRef: {kind: HelmRepository, name: charts}
  install:
    remediation: {retries: 3}
  timeout: 5m
  values:
    replicas: 2
    ratio: 1.5
    big: 12345678901
    enabled: true
    nothing: null
    list: [a, 1, {b: c}]
`

func sealedObject(t *testing.T, s *Sealer) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	NewWithT(t).Expect(yaml.Unmarshal([]byte(layerHelmRelease), &obj.Object)).To(Succeed())
	NewWithT(t).Expect(s.Seal("platform", obj)).To(Succeed())
	return obj
}

// TestSealer_aLayersSpecAsTheAPIServerStoresItIsSealed: the seal a layer
// computes before applying matches the spec the API server stores with its
// defaults filled in; any edit of the spec, and the annotation copied to
// another HelmRelease, break it.
func TestSealer_aLayersSpecAsTheAPIServerStoresItIsSealed(t *testing.T) {
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	g := NewWithT(t)
	ctx := context.Background()
	s, err := NewSealer(testKey)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}})).To(Succeed())

	obj := sealedObject(t, s)
	g.Expect(obj.GetAnnotations()).To(HaveKey(SealAnnotation))
	g.Expect(env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("kraan-operator"), client.ForceOwnership)).To(Succeed())

	stored := &kraanv1.HelmRelease{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "ingress"}, stored)).To(Succeed())
	g.Expect(stored.Spec.Interval.Duration).NotTo(BeZero(), "the API server filled in a default")
	g.Expect(s.Sealed("platform", stored)).To(BeTrue(), "the stored spec is what the layer sealed")
	g.Expect(s.Sealed("another-layer", stored)).To(BeFalse(), "sealed for its layer only")

	// The annotation copied to a HelmRelease of the same spec elsewhere.
	copied := stored.DeepCopy()
	copied.ObjectMeta = metav1.ObjectMeta{Namespace: "team-a", Name: "copy", Labels: stored.Labels, Annotations: stored.Annotations}
	g.Expect(env.Client.Create(ctx, copied)).To(Succeed())
	g.Expect(s.Sealed("platform", copied)).To(BeFalse(), "a seal is bound to its HelmRelease's name")

	// A tenant's edit of a field the layer sets breaks the seal; the
	// layer's next apply takes the field back, and seals it again.
	stored.Spec.Timeout = &metav1.Duration{Duration: time.Hour}
	g.Expect(env.Client.Update(ctx, stored)).To(Succeed())
	g.Expect(s.Sealed("platform", stored)).To(BeFalse())
	apply := func() {
		g.Expect(env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(sealedObject(t, s)), client.FieldOwner("kraan-operator"), client.ForceOwnership)).To(Succeed())
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "ingress"}, stored)).To(Succeed())
	}
	apply()
	g.Expect(stored.Spec.Timeout.Duration).To(Equal(5*time.Minute), "the layer's apply took its field back")
	g.Expect(s.Sealed("platform", stored)).To(BeTrue())

	// A field the layer does not set, added by a tenant, survives the
	// layer's apply (server-side apply keeps other managers' fields): the
	// HelmRelease stays unsealed, so it never acts as the platform with it.
	stored.Spec.TargetNamespace = "kube-system"
	g.Expect(env.Client.Update(ctx, stored)).To(Succeed())
	apply()
	g.Expect(stored.Spec.TargetNamespace).To(Equal("kube-system"))
	g.Expect(s.Sealed("platform", stored)).To(BeFalse())

	// Another operator's key (another cluster, a rotated key).
	other, err := NewSealer([]byte("another-key-of-enough-bytes-0123"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(other.Sealed("platform", stored)).To(BeFalse())
}

func TestPolicy_IdentityOf(t *testing.T) {
	s, err := NewSealer(testKey)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	sealed := func() *kraanv1.HelmRelease {
		obj := sealedObject(t, s)
		hr := &kraanv1.HelmRelease{}
		NewWithT(t).Expect(yaml.Unmarshal([]byte(layerHelmRelease), hr)).To(Succeed())
		hr.Annotations = obj.GetAnnotations()
		return hr
	}
	// Without the API server's defaults the seal does not hold: a spec
	// as the server stores it is what the policy is given.
	locked := Policy{Lockdown: true, PlatformNamespaces: []string{"kraan-system", "platform"}, Sealer: s}
	tenant := &kraanv1.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "app"}}
	named := tenant.DeepCopy()
	named.Spec.ServiceAccountName = "deployer"
	inPlatform := tenant.DeepCopy()
	inPlatform.Namespace = "platform"
	labelled := tenant.DeepCopy()
	labelled.Labels = map[string]string{manifest.LayerLabel: "platform"}
	tests := []struct {
		name      string
		policy    Policy
		hr        *kraanv1.HelmRelease
		want      string
		wantWaits bool
	}{
		{name: "a tenant's release under the lockdown", policy: locked, hr: tenant, want: "default"},
		{name: "a tenant's release, --default-service-account set", policy: Policy{Lockdown: true, ServiceAccount: "tenant"}, hr: tenant, want: "tenant"},
		{name: "one naming its account", policy: locked, hr: named, want: "deployer"},
		{name: "in a platform namespace", policy: locked, hr: inPlatform, want: ""},
		{name: "labelled as a layer's without its seal", policy: locked, hr: labelled, want: "default", wantWaits: true},
		{name: "unlocked, as Flux", policy: Policy{}, hr: tenant, want: ""},
		{name: "unlocked with --default-service-account", policy: Policy{ServiceAccount: "tenant"}, hr: inPlatform, want: "tenant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := tt.policy.IdentityOf(tt.hr)
			NewWithT(t).Expect(id.ServiceAccount).To(Equal(tt.want))
			NewWithT(t).Expect(id.Unsealed != nil).To(Equal(tt.wantWaits))
		})
	}
	// A sealed spec whose defaults the server has not filled in yet is
	// not the stored one: it waits, it does not act as the platform.
	NewWithT(t).Expect(locked.IdentityOf(sealed()).Unsealed).To(HaveOccurred())
}
