package api_test

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const validLayer = `
apiVersion: kraan.io/v1alpha1
kind: AddonsLayer
metadata: {name: base}
spec:
  version: 0.1.0
  source: {name: addons, namespace: kraan-system, path: ./addons/base}
  prereqs: {k8sVersion: v1.30, dependsOn: [bootstrap@0.1.0]}
`

const validRelease = `
apiVersion: kraan.io/v1alpha1
kind: HelmRelease
metadata: {name: podinfo, namespace: default}
spec:
  chart:
    spec:
      chart: podinfo
      sourceRef: {kind: HelmRepository, name: podinfo}
`

// validOCIRelease is Flux v1.7's chart template for a chart in an OCI
// registry, every field the operator implements set.
const validOCIRelease = `
apiVersion: kraan.io/v1alpha1
kind: HelmRelease
metadata: {name: podinfo, namespace: default}
spec:
  chart:
    kind: OCIRepository
    spec:
      url: oci://ghcr.io/stefanprodan/charts/podinfo
      ref: {semver: ">=6.0.0"}
      layerSelector: {mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip, operation: copy}
      provider: generic
      secretRef: {name: ghcr}
      certSecretRef: {name: ghcr-ca}
      interval: 10m
      timeout: 60s
      ignore: "*.md"
      insecure: false
      suspend: false
`

const validHabitat = `
apiVersion: habitat.kraan.io/v1alpha1
kind: Habitat
metadata: {name: redis, namespace: default}
spec:
  image: kinvolk/redis-hab
  service: {name: redis}
`

// change is one edit of a valid object: set path to value, or delete it when
// value is nil.
type change struct {
	path  string
	value any
}

func TestInvalidObjects_AreRejectedNamingTheField(t *testing.T) {
	cases := []struct {
		name    string
		base    string
		changes []change
		// want are substrings the API server's message must contain: the
		// field's path and what is wrong with it.
		want []string
	}{
		{"layer path without ./", validLayer, []change{{"spec.source.path", "addons/base"}},
			[]string{"spec.source.path", `should match '^\./'`}},
		{"layer dependsOn without version", validLayer, []change{{"spec.prereqs.dependsOn", []any{"bootstrap"}}},
			[]string{"spec.prereqs.dependsOn[0]", "should match"}},
		{"layer dependsOn with empty version", validLayer, []change{{"spec.prereqs.dependsOn", []any{"bootstrap@"}}},
			[]string{"spec.prereqs.dependsOn[0]", "should match"}},
		// `1.30` and `v1.30` are both accepted (Kraan's samples write
		// "1.16"); a word is not a version with or without a v.
		{"layer k8sVersion not a version", validLayer, []change{{"spec.prereqs.k8sVersion", "latest"}},
			[]string{"spec.prereqs.k8sVersion", "should match"}},
		{"layer k8sVersion with a v only", validLayer, []change{{"spec.prereqs.k8sVersion", "v"}},
			[]string{"spec.prereqs.k8sVersion", "should match"}},
		{"layer k8sVersion over 64 characters", validLayer,
			[]change{{"spec.prereqs.k8sVersion", "v1.30.0-" + strings.Repeat("a", 57)}},
			[]string{"spec.prereqs.k8sVersion", "64"}},
		{"layer interval not a duration", validLayer, []change{{"spec.interval", "one minute"}},
			[]string{"spec.interval", "should match"}},
		{"layer timeout not a duration", validLayer, []change{{"spec.timeout", "30"}},
			[]string{"spec.timeout", "should match"}},
		{"layer hold not a boolean", validLayer, []change{{"spec.hold", "yes"}},
			[]string{"spec.hold", "boolean"}},
		{"layer without version", validLayer, []change{{"spec.version", nil}},
			[]string{"spec.version", "Required value"}},
		{"layer unknown source kind", validLayer, []change{{"spec.source.kind", "HelmRepository"}},
			[]string{"spec.source.kind", "Unsupported value"}},
		{"release with chart and chartRef", validRelease,
			[]change{{"spec.chartRef", map[string]any{"kind": "OCIRepository", "name": "podinfo"}}},
			[]string{"spec", "exactly one of spec.chart or spec.chartRef must be set"}},
		{"release with neither chart nor chartRef", validRelease, []change{{"spec.chart", nil}},
			[]string{"spec", "exactly one of spec.chart or spec.chartRef must be set"}},
		{"release name over 53 characters", validRelease, []change{{"spec.releaseName", strings.Repeat("a", 54)}},
			[]string{"spec.releaseName", "53"}},
		{"release install retries below -1", validRelease,
			[]change{{"spec.install", map[string]any{"remediation": map[string]any{"retries": int64(-2)}}}},
			[]string{"spec.install.remediation.retries", "greater than or equal to -1"}},
		{"release upgrade retries below -1", validRelease,
			[]change{{"spec.upgrade", map[string]any{"remediation": map[string]any{"retries": int64(-5)}}}},
			[]string{"spec.upgrade.remediation.retries", "greater than or equal to -1"}},
		{"release unknown remediation strategy", validRelease,
			[]change{{"spec.upgrade", map[string]any{"remediation": map[string]any{"strategy": "reinstall"}}}},
			[]string{"spec.upgrade.remediation.strategy", "Unsupported value"}},
		{"release unknown drift mode", validRelease, []change{{"spec.driftDetection", map[string]any{"mode": "fix"}}},
			[]string{"spec.driftDetection.mode", "Unsupported value"}},
		{"release unknown crds policy", validRelease, []change{{"spec.install", map[string]any{"crds": "Replace"}}},
			[]string{"spec.install.crds", "Unsupported value"}},
		// Flux fields that are refused (internal/manifest.RefusedFields) are
		// in the schema so that the API server rejects them loudly instead of
		// pruning them.
		{"release refused kubeConfig configMapRef", validRelease,
			[]change{{"spec.kubeConfig", map[string]any{"configMapRef": map[string]any{"name": "provider"}}}},
			[]string{"spec.kubeConfig.configMapRef is not supported (UnsupportedField)", "workload identity"}},
		{"release kubeConfig without a Secret name", validRelease,
			[]change{{"spec.kubeConfig", map[string]any{"secretRef": map[string]any{"key": "value"}}}},
			[]string{"spec.kubeConfig.secretRef.name", "Required value"}},
		{"release refused chart verification", validRelease,
			[]change{{"spec.chart.spec.verify", map[string]any{"provider": "cosign"}}},
			[]string{"spec.chart.spec.verify is not supported (UnsupportedField)"}},
		{"release dependency readyExpr too long", validRelease,
			[]change{{"spec.dependsOn", []any{map[string]any{"name": "db", "readyExpr": strings.Repeat("x", 4097)}}}},
			[]string{"spec.dependsOn[0].readyExpr", "4096"}},
		// Flux v1.7's chart template for an OCI registry (spec.chart.kind
		// OCIRepository): the operator pulls the chart itself.
		{"release OCI chart without a url", validOCIRelease, []change{{"spec.chart.spec.url", nil}},
			[]string{"spec.chart", "spec.chart.spec.url is required when spec.chart.kind is OCIRepository"}},
		{"release OCI chart with a sourceRef", validOCIRelease,
			[]change{{"spec.chart.spec.sourceRef", map[string]any{"kind": "HelmRepository", "name": "charts"}}},
			[]string{"spec.chart", "sourceRef", "cannot be set when spec.chart.kind is OCIRepository"}},
		{"release OCI chart with a version", validOCIRelease, []change{{"spec.chart.spec.version", "1.x"}},
			[]string{"spec.chart", "the version is spec.chart.spec.ref"}},
		{"release OCI fields on a HelmChart template", validRelease, []change{{"spec.chart.spec.url", "oci://ghcr.io/x/podinfo"}},
			[]string{"spec.chart", "need spec.chart.kind OCIRepository"}},
		{"release OCI url not oci://", validOCIRelease, []change{{"spec.chart.spec.url", "https://ghcr.io/x/podinfo"}},
			[]string{"spec.chart.spec.url", "should match '^oci://.*$'"}},
		{"release OCI digest malformed", validOCIRelease, []change{{"spec.chart.spec.ref", map[string]any{"digest": "sha256:abc"}}},
			[]string{"spec.chart.spec.ref.digest", "should match"}},
		{"release refused OCI semverFilter", validOCIRelease,
			[]change{{"spec.chart.spec.ref", map[string]any{"semver": ">=1.0.0", "semverFilter": ".*-rc.*"}}},
			[]string{"spec.chart.spec.ref.semverFilter is not supported (UnsupportedField)"}},
		{"release refused OCI serviceAccountName", validOCIRelease, []change{{"spec.chart.spec.serviceAccountName", "puller"}},
			[]string{"spec.chart.spec.serviceAccountName is not supported (UnsupportedField)"}},
		{"release refused OCI proxySecretRef", validOCIRelease,
			[]change{{"spec.chart.spec.proxySecretRef", map[string]any{"name": "proxy"}}},
			[]string{"spec.chart.spec.proxySecretRef is not supported (UnsupportedField)"}},
		{"release refused OCI workload identity", validOCIRelease, []change{{"spec.chart.spec.provider", "aws"}},
			[]string{"spec.chart.spec.provider aws, azure and gcp are not supported (UnsupportedField)"}},
		{"release refused OCI verification", validOCIRelease,
			[]change{{"spec.chart.spec.verify", map[string]any{"provider": "cosign", "matchOIDCIdentity": []any{map[string]any{"issuer": "x", "subject": "y"}}}}},
			[]string{"spec.chart.spec.verify is not supported (UnsupportedField)"}},
		{"release unknown chart kind", validRelease, []change{{"spec.chart.kind", "Bucket"}},
			[]string{"spec.chart.kind", "Unsupported value"}},
		{"release post-renderer without kustomize", validRelease,
			[]change{{"spec.postRenderers", []any{map[string]any{}}}},
			[]string{"spec.postRenderers[0]", "must set kustomize"}},
		{"release retryInterval with RemediateOnFailure", validRelease,
			[]change{{"spec.upgrade", map[string]any{"strategy": map[string]any{"name": "RemediateOnFailure", "retryInterval": "1m"}}}},
			[]string{"spec.upgrade.strategy", "retryInterval cannot be set"}},
		{"release unknown install strategy", validRelease,
			[]change{{"spec.install", map[string]any{"strategy": map[string]any{"name": "Hope"}}}},
			[]string{"spec.install.strategy.name", "Unsupported value"}},
		{"release valuesFrom unknown kind", validRelease,
			[]change{{"spec.valuesFrom", []any{map[string]any{"kind": "Deployment", "name": "x"}}}},
			[]string{"spec.valuesFrom[0].kind", "Unsupported value"}},
		// The fields of Flux v1.5/v1.6 take Flux's values only.
		{"release unknown wait strategy", validRelease, []change{{"spec.waitStrategy", map[string]any{"name": "watcher"}}},
			[]string{"spec.waitStrategy.name", "Unsupported value", `"poller"`, `"legacy"`}},
		{"release wait strategy without name", validRelease, []change{{"spec.waitStrategy", map[string]any{}}},
			[]string{"spec.waitStrategy.name", "Required value"}},
		{"release unknown post-render strategy", validRelease, []change{{"spec.postRenderStrategy", "hooks"}},
			[]string{"spec.postRenderStrategy", "Unsupported value", `"nohooks"`, `"combined"`, `"separate"`}},
		{"release install serverSideApply not a boolean", validRelease,
			[]change{{"spec.install", map[string]any{"serverSideApply": "auto"}}},
			[]string{"spec.install.serverSideApply", "boolean"}},
		{"release unknown upgrade serverSideApply", validRelease,
			[]change{{"spec.upgrade", map[string]any{"serverSideApply": "true"}}},
			[]string{"spec.upgrade.serverSideApply", "Unsupported value", `"enabled"`, `"disabled"`, `"auto"`}},
		{"release unknown rollback serverSideApply", validRelease,
			[]change{{"spec.rollback", map[string]any{"serverSideApply": "Enabled"}}},
			[]string{"spec.rollback.serverSideApply", "Unsupported value"}},
		{"release unknown chartNameChangeStrategy", validRelease,
			[]change{{"spec.upgrade", map[string]any{"chartNameChangeStrategy": "Replace"}}},
			[]string{"spec.upgrade.chartNameChangeStrategy", "Unsupported value", `"InPlaceUpdate"`, `"Reinstall"`}},
		{"release health check without current", validRelease,
			[]change{{"spec.healthCheckExprs", []any{map[string]any{"apiVersion": "cert-manager.io/v1", "kind": "Certificate"}}}},
			[]string{"spec.healthCheckExprs[0].current", "Required value"}},
		{"release health check without apiVersion", validRelease,
			[]change{{"spec.healthCheckExprs", []any{map[string]any{"kind": "Certificate", "current": "true"}}}},
			[]string{"spec.healthCheckExprs[0].apiVersion", "Required value"}},
		// A tenant's HelmRelease must name a ServiceAccount of its namespace:
		// anything else would be impersonated as a user name (issue #26).
		{"release serviceAccountName with a colon", validRelease,
			[]change{{"spec.serviceAccountName", "system:serviceaccount:kube-system:admin"}},
			[]string{"spec.serviceAccountName", "must be a ServiceAccount name"}},
		{"release serviceAccountName in capitals", validRelease, []change{{"spec.serviceAccountName", "Deployer"}},
			[]string{"spec.serviceAccountName", "must be a ServiceAccount name"}},
		{"release serviceAccountName with a slash", validRelease, []change{{"spec.serviceAccountName", "../deployer"}},
			[]string{"spec.serviceAccountName", "must be a ServiceAccount name"}},
		{"release serviceAccountName ending in a dot", validRelease, []change{{"spec.serviceAccountName", "deployer."}},
			[]string{"spec.serviceAccountName", "must be a ServiceAccount name"}},
		{"release serviceAccountName over 253 characters", validRelease,
			[]change{{"spec.serviceAccountName", strings.Repeat("a", 254)}},
			[]string{"spec.serviceAccountName", "253"}},
		{"habitat leader with one member", validHabitat,
			[]change{{"spec.service.topology", "leader"}, {"spec.count", int64(1)}},
			[]string{"spec", "a leader topology needs count >= 3"}},
		{"habitat unknown topology", validHabitat, []change{{"spec.service.topology", "ring"}},
			[]string{"spec.service.topology", "Unsupported value"}},
		{"habitat bind without group", validHabitat,
			[]change{{"spec.service.bind", []any{map[string]any{"name": "db", "service": "redis"}}}},
			[]string{"spec.service.bind[0].group", "Required value"}},
		{"habitat bind with a malformed service", validHabitat,
			[]change{{"spec.service.bind", []any{map[string]any{"name": "db", "service": "redis.prod", "group": "prod"}}}},
			[]string{"spec.service.bind[0].service", "should match"}},
		{"habitat ring secret without timestamp", validHabitat, []change{{"spec.service.ringSecretName", "prod-key"}},
			[]string{"spec.service.ringSecretName", "should match"}},
		{"habitat generated key without ring", validHabitat, []change{{"spec.service.generateRingKey", true}},
			[]string{"spec.service", "generateRingKey needs ring"}},
		{"habitat negative count", validHabitat, []change{{"spec.count", int64(-1)}},
			[]string{"spec.count", "greater than or equal to 0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := mustDecode(t, tc.base)
			for _, c := range tc.changes {
				apply(t, obj, c)
			}
			err := env.Client.Create(context.Background(), obj, client.DryRunAll)
			g.Expect(err).To(HaveOccurred(), "the API server accepted an invalid object")
			for _, w := range tc.want {
				g.Expect(err.Error()).To(ContainSubstring(w))
			}
		})
	}
}

func apply(t *testing.T, obj *unstructured.Unstructured, c change) {
	t.Helper()
	fields := strings.Split(c.path, ".")
	if c.value == nil {
		unstructured.RemoveNestedField(obj.Object, fields...)
		return
	}
	if err := unstructured.SetNestedField(obj.Object, c.value, fields...); err != nil {
		t.Fatalf("setting %s: %v", c.path, err)
	}
}

// TestServiceAccountName_AcceptsServiceAccountNames guards the CEL rule on
// spec.serviceAccountName against refusing a name a ServiceAccount can have.
func TestServiceAccountName_AcceptsServiceAccountNames(t *testing.T) {
	for _, name := range []string{"deployer", "a", "team-a.deployer", "sa-1", strings.Repeat("a", 253)} {
		t.Run(name[:min(len(name), 20)], func(t *testing.T) {
			obj := mustDecode(t, validRelease)
			apply(t, obj, change{"spec.serviceAccountName", name})
			NewWithT(t).Expect(env.Client.Create(context.Background(), obj, client.DryRunAll)).To(Succeed())
		})
	}
}
