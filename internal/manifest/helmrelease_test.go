package manifest

import (
	"os"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func readObject(t *testing.T, file string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return object(t, string(data))
}

// specOf decodes an expected spec written as YAML, with int64 numbers like
// the decoder's.
func specOf(t *testing.T, doc string) map[string]any {
	t.Helper()
	return object(t, "apiVersion: x/v1\nkind: X\nspec:\n"+doc).Object["spec"].(map[string]any)
}

func TestConvertHelmRelease_versions(t *testing.T) {
	tests := []struct {
		name     string
		file     string
		wantSpec string
	}{
		{
			name: "v2",
			file: "testdata/helmreleases/v2.yaml",
			wantSpec: `
  interval: 5m
  releaseName: podinfo
  targetNamespace: podinfo
  chart:
    spec:
      chart: podinfo
      version: "6.x"
      sourceRef: {kind: HelmRepository, name: podinfo, namespace: flux-system}
      interval: 10m
      reconcileStrategy: Revision
      valuesFiles: [values.yaml, values-prod.yaml]
      ignoreMissingValuesFiles: true
  install:
    crds: CreateReplace
    createNamespace: true
    strategy: {name: RetryOnFailure}
    remediation: {retries: -1}
  upgrade:
    cleanupOnFail: true
    remediation: {retries: 3, strategy: uninstall, remediateLastFailure: false}
  test:
    enable: true
    filters: [{name: smoke, exclude: true}]
  driftDetection:
    mode: enabled
    ignore:
      - paths: ["/spec/replicas"]
        target: {kind: Deployment, labelSelector: app=podinfo}
  valuesFrom:
    - {kind: ConfigMap, name: podinfo-values, valuesKey: prod.yaml, targetPath: replicaCount, optional: true}
  values:
    replicaCount: 2
    postRenderers: values are the chart's, never pruned
  postRenderers:
    - kustomize:
        images: [{name: podinfo, newTag: 6.5.1}]
  commonMetadata:
    labels: {team: a}
  persistentClient: false
`,
		},
		{
			name: "v2beta2: skipCRDs is carried (the engine reads it as crds: Skip)",
			file: "testdata/helmreleases/v2beta2.yaml",
			wantSpec: `
  interval: 10m
  timeout: 3m
  maxHistory: 3
  dependsOn: [{name: base, namespace: infra}]
  chart:
    spec:
      chart: ./charts/redis
      sourceRef: {kind: GitRepository, name: charts}
  install:
    skipCRDs: true
    disableWait: true
    remediation: {retries: 2, ignoreTestFailures: true}
  upgrade:
    remediation: {retries: 2, remediateLastFailure: true, strategy: rollback}
  rollback: {cleanupOnFail: true, recreate: true}
  uninstall: {keepHistory: true, deletionPropagation: foreground}
  test: {enable: true, ignoreFailures: true}
  driftDetection: {mode: warn}
  postRenderers:
    - kustomize:
        patches:
          - patch: |
              - op: add
                path: /metadata/labels/x
                value: y
            target: {kind: StatefulSet}
`,
		},
		{
			name: "v2beta1: valuesFile first in valuesFiles, patchesStrategicMerge and patchesJson6902 become patches",
			file: "testdata/helmreleases/v2beta1.yaml",
			wantSpec: `
  interval: 1m
  serviceAccountName: helm
  chart:
    spec:
      chart: ingress-nginx
      version: 4.x
      sourceRef: {kind: HelmRepository, name: ingress-nginx}
      valuesFiles: [values-base.yaml, values-prod.yaml]
  install:
    crds: Create
    skipCRDs: true
    remediation: {retries: 3}
  upgrade:
    remediation: {retries: 3, strategy: uninstall}
  valuesFrom:
    - {kind: Secret, name: nginx-values, valuesKey: values.yaml, targetPath: controller.config}
  postRenderers:
    - kustomize:
        patches:
          - patch: |
              apiVersion: apps/v1
              kind: Deployment
              metadata:
                name: nginx
          - patch: |
              - op: replace
                path: /spec/replicas
                value: 2
            target: {kind: Deployment, name: nginx}
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ConvertHelmRelease(readObject(t, tt.file))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.GetAPIVersion()).To(Equal("kraan.io/v1alpha1"))
			g.Expect(got.GetKind()).To(Equal("HelmRelease"))
			g.Expect(got.Object["spec"]).To(Equal(specOf(t, tt.wantSpec)))
			g.Expect(got.Object).NotTo(HaveKey("status"))
		})
	}
}

func TestConvertHelmRelease_metadata(t *testing.T) {
	g := NewWithT(t)
	in := readObject(t, "testdata/helmreleases/v2.yaml")
	in.SetUID("abc")
	in.SetFinalizers([]string{"finalizers.fluxcd.io"})
	got, err := ConvertHelmRelease(in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Object["metadata"]).To(Equal(map[string]any{
		"name": "podinfo", "namespace": "apps",
		"labels": map[string]any{"app": "podinfo"},
		"annotations": map[string]any{
			"kraan.updateVersion":     "true",
			"kraan.io/converted-from": "helm.toolkit.fluxcd.io/v2",
		},
	}))
}

func TestConvertHelmRelease_leavesInputAlone(t *testing.T) {
	g := NewWithT(t)
	in := readObject(t, "testdata/helmreleases/v2beta1.yaml")
	before := in.DeepCopy()
	_, err := ConvertHelmRelease(in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(in).To(Equal(before))
}

func TestConvertHelmRelease_refused(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		wantErr string
	}{
		{name: "old version", doc: "apiVersion: helm.toolkit.fluxcd.io/v2alpha1\nkind: HelmRelease\nmetadata: {name: a, namespace: team}\nspec: {}",
			wantErr: "HelmRelease team/a: apiVersion helm.toolkit.fluxcd.io/v2alpha1 is not supported: use helm.toolkit.fluxcd.io/v2"},
		{name: "not a Flux HelmRelease", doc: "apiVersion: kraan.io/v1alpha1\nkind: HelmRelease\nmetadata: {name: a}\nspec: {}",
			wantErr: "HelmRelease a: kraan.io/v1alpha1, Kind=HelmRelease is not a Flux HelmRelease"},
		{name: "no spec", doc: "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: a}",
			wantErr: "HelmRelease a: spec is missing or not a mapping"},
		{name: "remote cluster by workload identity", doc: hrWith("kubeConfig: {configMapRef: {name: provider}}"),
			wantErr: "HelmRelease team/a: field spec.kubeConfig.configMapRef is not supported (UnsupportedField): a cloud provider's workload identity is not implemented; use kubeConfig.secretRef"},
		{name: "signature verification", doc: hrWith("chart: {spec: {chart: c, sourceRef: {kind: HelmRepository, name: r}, verify: {provider: cosign}}}"),
			wantErr: "field spec.chart.spec.verify is not supported (UnsupportedField): the chart would be installed without verifying its signature"},
		{name: "fields Flux v1.7 does not have are refused, all named, not dropped", doc: hrWith("chartRef: {kind: OCIRepository, name: c}\n  waitStrategy: {name: poller, timeout: 1m}\n  upgrade: {serverSideApply: auto, atomic: true}"),
			wantErr: "HelmRelease team/a: field spec.upgrade.atomic, spec.waitStrategy.timeout is not supported (UnsupportedField)"},
		{name: "a typo is refused, not dropped", doc: hrWith("chartRef: {kind: OCIRepository, name: c}\n  install: {remediaton: {retries: 3}}"),
			wantErr: "field spec.install.remediaton is not supported (UnsupportedField)"},
		{name: "chartRef to another kind", doc: hrWith("chartRef: {kind: GitRepository, name: c}"),
			wantErr: "HelmRelease team/a: spec.chartRef.kind GitRepository is not supported (UnsupportedField): only OCIRepository, HelmChart and ExternalArtifact"},
		{name: "wrong type", doc: hrWith("chartRef: {kind: OCIRepository, name: c}\n  maxHistory: lots"),
			wantErr: "HelmRelease team/a: spec cannot be converted: json: cannot unmarshal string into Go struct field HelmReleaseSpec.maxHistory of type int"},
		{name: "bad duration", doc: hrWith("chartRef: {kind: OCIRepository, name: c}\n  timeout: soon"),
			wantErr: `HelmRelease team/a: spec cannot be converted: time: invalid duration "soon"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := ConvertHelmRelease(object(t, tt.doc))
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}

func TestConvertHelmRelease_chartRef(t *testing.T) {
	g := NewWithT(t)
	got, err := ConvertHelmRelease(object(t, hrWith("chartRef: {kind: OCIRepository, name: podinfo, namespace: flux-system}")))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Object["spec"]).To(Equal(specOf(t, "  interval: 5m\n  chartRef: {kind: OCIRepository, name: podinfo, namespace: flux-system}\n")))
}

func TestNewFieldTree_followsOurAPI(t *testing.T) {
	tests := []struct {
		path     []string
		wantLeaf bool
		wantNone bool
	}{
		{path: []string{"chart", "spec", "valuesFiles"}, wantLeaf: true},
		{path: []string{"install", "disableWait"}, wantLeaf: true}, // from the inlined ActionOptions
		{path: []string{"upgrade", "remediation", "strategy"}, wantLeaf: true},
		{path: []string{"driftDetection", "ignore", "target", "kind"}, wantLeaf: true}, // through a slice
		{path: []string{"values"}, wantLeaf: true},                                     // apiextensionsv1.JSON: opaque
		{path: []string{"interval"}, wantLeaf: true},                                   // metav1.Duration: opaque
		{path: []string{"install"}},
		{path: []string{"install", "ActionOptions"}, wantNone: true},
		{path: []string{"postRenderers", "kustomize", "patches", "target", "labelSelector"}, wantLeaf: true},
		{path: []string{"chart", "spec", "verify"}, wantLeaf: true},     // refused at admission; opaque
		{path: []string{"waitStrategy", "name"}, wantLeaf: true},        // Flux v1.6
		{path: []string{"healthCheckExprs", "current"}, wantLeaf: true}, // Flux v1.6
		{path: []string{"waitStrategy", "timeout"}, wantNone: true},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.path, "."), func(t *testing.T) {
			g := NewWithT(t)
			node := helmReleaseSpecFields
			for _, p := range tt.path {
				node = node.children[p]
				if node == nil {
					break
				}
			}
			if tt.wantNone {
				g.Expect(node).To(BeNil())
				return
			}
			g.Expect(node).NotTo(BeNil())
			g.Expect(node.children == nil).To(Equal(tt.wantLeaf))
		})
	}
}

func TestIsFluxHelmRelease(t *testing.T) {
	tests := []struct {
		apiVersion, kind string
		want             bool
	}{
		{"helm.toolkit.fluxcd.io/v2", "HelmRelease", true},
		{"helm.toolkit.fluxcd.io/v2beta1", "HelmRelease", true},
		{"helm.toolkit.fluxcd.io/v2alpha1", "HelmRelease", true},
		{"kraan.io/v1alpha1", "HelmRelease", false},
		{"source.toolkit.fluxcd.io/v1", "HelmRepository", false},
	}
	for _, tt := range tests {
		t.Run(tt.apiVersion+"/"+tt.kind, func(t *testing.T) {
			g := NewWithT(t)
			obj := &unstructured.Unstructured{}
			obj.SetAPIVersion(tt.apiVersion)
			obj.SetKind(tt.kind)
			g.Expect(IsFluxHelmRelease(obj)).To(Equal(tt.want))
		})
	}
}

func hrWith(spec string) string {
	return "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: a, namespace: team}\n" +
		"spec:\n  interval: 5m\n  " + spec + "\n"
}
