package api_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// fluxV17OCIRelease is a Flux helm-controller v1.7 HelmRelease whose chart
// is in an OCI registry, as Flux's docs write it.
const fluxV17OCIRelease = `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: podinfo-oci, namespace: default}
spec:
  interval: 10m
  chart:
    kind: OCIRepository
    spec:
      url: oci://ghcr.io/stefanprodan/charts/podinfo
      ref: {tag: 6.9.0}
      secretRef: {name: ghcr}
      insecure: true
`

// TestHelmRelease_AcceptsFluxV17OCIChart converts Flux v1.7's inline OCI chart
// as a layer does, creates it, and reads it back as written; the defaults of
// the HelmChart template (version "*", reconcileStrategy ChartVersion) do not
// trip the rules that keep HelmChart-only fields out of an OCI template.
func TestHelmRelease_AcceptsFluxV17OCIChart(t *testing.T) {
	g := NewWithT(t)
	got := convertAndCreate(t, fluxV17OCIRelease)
	g.Expect(got.Spec.Chart.IsOCI()).To(BeTrue())
	g.Expect(got.Spec.Chart.Spec.URL).To(Equal("oci://ghcr.io/stefanprodan/charts/podinfo"))
	g.Expect(got.Spec.Chart.Spec.Ref).To(Equal(&kraanv1.OCIRepositoryRef{Tag: "6.9.0"}))
	g.Expect(got.Spec.Chart.Spec.SecretRef).To(Equal(&kraanv1.LocalObjectReference{Name: "ghcr"}))
	g.Expect(got.Spec.Chart.Spec.Insecure).To(BeTrue())
	g.Expect(got.Spec.Chart.Spec.SourceRef).To(BeNil())

	every := mustDecode(t, validOCIRelease)
	every.SetName("podinfo-every-field")
	g.Expect(env.Client.Create(context.Background(), every, client.DryRunAll)).To(Succeed())
}
