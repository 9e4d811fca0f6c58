package podsecurity_test

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/kraan-io/kraan-operator/test/testenv"
)

// source is one form the operator's Deployment ships in.
type source struct {
	name string
	// nsPrefix names the namespaces the source's Deployments are tried in.
	nsPrefix string
	// render returns the source's Deployments, as they would be applied.
	render func(t *testing.T) []appsv1.Deployment
}

// sources are every way the operator is installed (docs/olm.md,
// docs/operations.md).
var sources = []source{
	{name: "kustomize config/default", nsPrefix: "psa-default", render: func(t *testing.T) []appsv1.Deployment {
		return kustomizeDeployments(t, "config/default")
	}},
	{name: "kustomize config/namespaced", nsPrefix: "psa-namespaced", render: func(t *testing.T) []appsv1.Deployment {
		return kustomizeDeployments(t, "config/namespaced")
	}},
	{name: "Helm chart dist/chart", nsPrefix: "psa-chart", render: chartDeployments},
	{name: "OLM bundle CSV", nsPrefix: "psa-csv", render: csvDeployments},
}

func repoPath(t *testing.T, elem ...string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return filepath.Join(append([]string{root}, elem...)...)
}

// kustomizeDeployments builds the kustomization in dir (relative to the
// repository) in process, with the kustomize API the operator is built with,
// as `make deploy` builds config/default with kubectl's kustomize. The
// Namespace it creates must enforce the restricted standard itself.
func kustomizeDeployments(t *testing.T, dir string) []appsv1.Deployment {
	t.Helper()
	g := NewWithT(t)
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), repoPath(t, dir))
	g.Expect(err).NotTo(HaveOccurred())
	docs := make([][]byte, 0, resources.Size())
	for _, r := range resources.Resources() {
		data, err := r.MarshalJSON()
		g.Expect(err).NotTo(HaveOccurred())
		docs = append(docs, data)
	}
	namespaces := objectsOfKind[corev1.Namespace](t, docs, "Namespace")
	g.Expect(namespaces).To(HaveLen(1), "the namespace the operator is deployed to")
	g.Expect(namespaces[0].Labels).To(HaveKeyWithValue(enforceLabel, "restricted"),
		"the namespace %s creates enforces the restricted standard", dir)
	return objectsOfKind[appsv1.Deployment](t, docs, "Deployment")
}

// chartDeployments renders dist/chart with its default values, client side,
// with the Helm SDK the operator embeds (as `helm template` would).
func chartDeployments(t *testing.T) []appsv1.Deployment {
	t.Helper()
	g := NewWithT(t)
	chrt, err := loader.Load(repoPath(t, "dist", "chart"))
	g.Expect(err).NotTo(HaveOccurred())
	install := action.NewInstall(&action.Configuration{})
	install.ReleaseName, install.Namespace = "kraan", "kraan-system"
	install.DryRunStrategy, install.IncludeCRDs = action.DryRunClient, false
	// The plane's version, for the chart's kubeVersion constraint.
	install.KubeVersion = &common.KubeVersion{Version: "v1.37.2", Major: "1", Minor: "37"}
	rel, err := install.RunWithContext(t.Context(), chrt, nil)
	g.Expect(err).NotTo(HaveOccurred())
	manifests := releaseutil.SplitManifests(rel.(*release.Release).Manifest)
	docs := make([][]byte, 0, len(manifests))
	for _, m := range manifests {
		docs = append(docs, []byte(m))
	}
	return objectsOfKind[appsv1.Deployment](t, docs, "Deployment")
}

// csvDeployments reads the Deployments OLM creates from the CSV in
// bundle/manifests: spec.install.spec.deployments, named and labelled as the
// CSV says.
func csvDeployments(t *testing.T) []appsv1.Deployment {
	t.Helper()
	g := NewWithT(t)
	data, err := os.ReadFile(repoPath(t, "bundle", "manifests", "kraan-operator.clusterserviceversion.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	g.Expect(yaml.UnmarshalStrict(data, csv)).To(Succeed())
	g.Expect(csv.Spec.InstallStrategy.StrategyName).To(Equal(operatorsv1alpha1.InstallStrategyNameDeployment))
	specs := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
	deps := make([]appsv1.Deployment, 0, len(specs))
	for _, s := range specs {
		deps = append(deps, appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: s.Name, Labels: s.Label},
			Spec:       s.Spec,
		})
	}
	return deps
}

// objectsOfKind decodes the documents of kind into T, strictly, so that a
// field this Go type does not know (a misspelt securityContext, say) fails
// instead of being dropped on the way to the API server.
func objectsOfKind[T any](t *testing.T, docs [][]byte, kind string) []T {
	t.Helper()
	g := NewWithT(t)
	var out []T
	for _, doc := range docs {
		meta := metav1.TypeMeta{}
		g.Expect(yaml.Unmarshal(doc, &meta)).To(Succeed())
		if meta.Kind != kind {
			continue
		}
		var obj T
		g.Expect(yaml.UnmarshalStrict(doc, &obj)).To(Succeed(), "%s", doc)
		out = append(out, obj)
	}
	return out
}
