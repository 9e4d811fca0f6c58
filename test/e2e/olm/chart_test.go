package olm_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	release "helm.sh/helm/v4/pkg/release/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kraan-io/kraan-operator/test/testenv"
)

const (
	chartRelease = "kraan"
	chartNS      = "kraan-chart"
)

func chartDir(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return filepath.Join(root, "dist", "chart")
}

func helmConfig(t *testing.T, ns string) *action.Configuration {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &kubeconfig, &ns
	helmCfg := &action.Configuration{}
	NewWithT(t).Expect(helmCfg.Init(flags, ns, "secret")).To(Succeed())
	return helmCfg
}

// TestChart_InstallsRestrictedOperator installs dist/chart into a namespace
// enforcing the restricted Pod Security Standard: the Deployment only rolls
// out if its pod passes admission.
func TestChart_InstallsRestrictedOperator(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: chartNS, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
	}}}
	g.Expect(k8s.Create(ctx, ns)).To(Succeed())
	// The namespace really enforces it: a pod without the restricted settings is refused.
	loose := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: chartNS, Name: "loose"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/loose"}}},
	}
	g.Expect(k8s.Create(ctx, loose)).To(MatchError(ContainSubstring("violates PodSecurity")))

	chrt, err := loader.Load(chartDir(t))
	g.Expect(err).NotTo(HaveOccurred())
	install := action.NewInstall(helmConfig(t, chartNS))
	install.ReleaseName, install.Namespace = chartRelease, chartNS
	install.WaitStrategy, install.Timeout = kube.LegacyStrategy, 2*time.Minute
	values := map[string]any{"image": map[string]any{"repository": "registry.example/kraan", "tag": "test"}}
	rel, err := install.RunWithContext(ctx, chrt, values)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.(*release.Release).Info.Status.String()).To(Equal("deployed"))

	// The CRDs are the generated ones and are established.
	for _, name := range testenv.OperatorCRDNames(t) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, crd)).To(Succeed(), name)
	}

	dep := &appsv1.Deployment{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: chartNS, Name: chartRelease + "-controller-manager"}, dep)).To(Succeed())
	g.Expect(dep.Status.ReadyReplicas).To(Equal(int32(1)), "Helm's wait returned before the Deployment was ready")
	c := dep.Spec.Template.Spec.Containers[0]
	g.Expect(c.Image).To(Equal("registry.example/kraan:test"))
	g.Expect(c.Args).To(ContainElements("--leader-elect", "--metrics-bind-address=:8443"))
	g.Expect(dep.Spec.Template.Spec.ServiceAccountName).To(Equal(chartRelease + "-controller-manager"))

	// The manager's ClusterRole carries exactly the generated rules.
	role := &rbacv1.ClusterRole{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: chartRelease + "-manager-role"}, role)).To(Succeed())
	g.Expect(role.Rules).To(Equal(generatedRules(t)))

	svc := &corev1.Service{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: chartNS, Name: chartRelease + "-metrics"}, svc)).To(Succeed())
	g.Expect(svc.Spec.Ports).To(HaveLen(1))
	g.Expect(svc.Spec.Ports[0].Port).To(Equal(int32(8443)))
	g.Expect(svc.Spec.Selector).To(Equal(dep.Spec.Selector.MatchLabels))

	uninstall := action.NewUninstall(helmConfig(t, chartNS))
	uninstall.WaitStrategy, uninstall.Timeout = kube.LegacyStrategy, time.Minute
	_, err = uninstall.Run(chartRelease)
	g.Expect(err).NotTo(HaveOccurred())
	err = k8s.Get(ctx, client.ObjectKeyFromObject(dep), &appsv1.Deployment{})
	g.Expect(client.IgnoreNotFound(err)).To(Succeed())
	g.Expect(err).To(HaveOccurred(), "the Deployment outlived helm uninstall")
}

// TestChart_ServiceMonitorIsOptional renders the chart without a cluster.
func TestChart_ServiceMonitorIsOptional(t *testing.T) {
	g := NewWithT(t)
	chrt, err := loader.Load(chartDir(t))
	g.Expect(err).NotTo(HaveOccurred())
	render := func(values map[string]any) (string, error) { return renderChart(t, values) }
	manifest, err := render(nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(manifest).NotTo(ContainSubstring("kind: ServiceMonitor"))
	g.Expect(manifest).To(ContainSubstring("image: ghcr.io/kraan-io/kraan-operator:v" + chrt.Metadata.AppVersion))

	withTLS := map[string]any{"tls": map[string]any{"secretName": "metrics-cert"}}
	manifest, err = render(map[string]any{"serviceMonitor": map[string]any{"enabled": true}, "metrics": withTLS})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(manifest).To(ContainSubstring("kind: ServiceMonitor"))

	_, err = render(map[string]any{
		"serviceMonitor": map[string]any{"enabled": true},
		"metrics":        map[string]any{"service": map[string]any{"enabled": false}},
	})
	g.Expect(err).To(MatchError(ContainSubstring("serviceMonitor.enabled needs metrics.service.enabled")))
}

// TestChart_ServiceMonitorVerifiesTLS: the ServiceMonitor verifies the
// metrics endpoint's certificate with the CA of the metrics TLS Secret and
// the Service's DNS name, the operator serves that Secret's certificate
// (--metrics-cert-dir), and without a certificate to verify the chart
// refuses to render a ServiceMonitor rather than skip verification.
func TestChart_ServiceMonitorVerifiesTLS(t *testing.T) {
	g := NewWithT(t)
	_, err := renderChart(t, map[string]any{"serviceMonitor": map[string]any{"enabled": true}})
	g.Expect(err).To(MatchError(ContainSubstring("serviceMonitor.enabled needs metrics.tls.secretName or metrics.tls.certManager.enabled")))

	for _, tc := range []struct {
		name   string
		tls    map[string]any
		secret string
		issued bool
	}{
		{"a Secret of the user's", map[string]any{"secretName": "metrics-cert"}, "metrics-cert", false},
		{"cert-manager", map[string]any{"certManager": map[string]any{"enabled": true}}, chartRelease + "-metrics-tls", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			manifest, err := renderChart(t, map[string]any{
				"serviceMonitor": map[string]any{"enabled": true}, "metrics": map[string]any{"tls": tc.tls}})
			g.Expect(err).NotTo(HaveOccurred())
			objs := renderedObjects(g, manifest)

			sm := objs["ServiceMonitor/"+chartRelease+"-metrics"]
			g.Expect(sm).NotTo(BeNil())
			endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
			g.Expect(endpoints).To(HaveLen(1))
			tlsConfig := endpoints[0].(map[string]any)["tlsConfig"]
			g.Expect(tlsConfig).To(Equal(map[string]any{
				"ca":                 map[string]any{"secret": map[string]any{"name": tc.secret, "key": "ca.crt"}},
				"serverName":         chartRelease + "-metrics." + chartNS + ".svc",
				"insecureSkipVerify": false,
			}))

			dep := renderedDeployments(g, manifest)[chartRelease+"-controller-manager"]
			g.Expect(dep.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--metrics-cert-dir=/etc/kraan/metrics-tls"))
			g.Expect(dep.Spec.Template.Spec.Volumes).To(ContainElement(And(
				HaveField("Name", "metrics-tls"), HaveField("VolumeSource.Secret.SecretName", tc.secret))))

			cert := objs["Certificate/"+chartRelease+"-metrics-tls"]
			if !tc.issued {
				g.Expect(cert).To(BeNil())
				return
			}
			g.Expect(cert).NotTo(BeNil())
			dnsNames, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
			g.Expect(dnsNames).To(ContainElement(chartRelease + "-metrics." + chartNS + ".svc"))
			secretName, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
			g.Expect(secretName).To(Equal(tc.secret))
		})
	}
}

// renderedObjects decodes every object of a rendered manifest, by kind/name.
func renderedObjects(g Gomega, manifest string) map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	for _, doc := range strings.Split(manifest, "\n---") {
		u := &unstructured.Unstructured{}
		g.Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(Succeed())
		if len(u.Object) > 0 {
			out[u.GetKind()+"/"+u.GetName()] = u
		}
	}
	return out
}

// renderChart renders dist/chart with values, without a cluster, and returns
// its manifest.
func renderChart(t *testing.T, values map[string]any) (string, error) {
	chrt, err := loader.Load(chartDir(t))
	if err != nil {
		return "", err
	}
	install := action.NewInstall(&action.Configuration{})
	install.ReleaseName, install.Namespace = chartRelease, chartNS
	install.DryRunStrategy, install.IncludeCRDs = action.DryRunClient, false
	install.KubeVersion = &common.KubeVersion{Version: "v1.37.2", Major: "1", Minor: "37"}
	rel, err := install.Run(chrt, values)
	if err != nil {
		return "", err
	}
	return rel.(*release.Release).Manifest, nil
}

// renderedDeployments decodes the Deployments of a rendered manifest, by name.
func renderedDeployments(g Gomega, manifest string) map[string]*appsv1.Deployment {
	out := map[string]*appsv1.Deployment{}
	for _, doc := range strings.Split(manifest, "\n---") {
		if !strings.Contains(doc, "kind: Deployment") {
			continue
		}
		d := &appsv1.Deployment{}
		g.Expect(yaml.Unmarshal([]byte(doc), d)).To(Succeed())
		out[d.Name] = d
	}
	return out
}

// TestChart_ShardsRenderOneDeploymentEach: `shards: [a, b]` gives one
// Deployment per shard selecting its objects by Flux's sharding label, and the
// default Deployment takes the objects without it; without shards the chart
// renders the one Deployment, with no selector flag.
func TestChart_ShardsRenderOneDeploymentEach(t *testing.T) {
	g := NewWithT(t)
	manifest, err := renderChart(t, nil)
	g.Expect(err).NotTo(HaveOccurred())
	deployments := renderedDeployments(g, manifest)
	g.Expect(deployments).To(HaveLen(1))
	g.Expect(deployments[chartRelease+"-controller-manager"].Spec.Template.Spec.Containers[0].Args).
		NotTo(ContainElement(HavePrefix("--watch-label-selector")))

	manifest, err = renderChart(t, map[string]any{"shards": []any{"a", "b"}})
	g.Expect(err).NotTo(HaveOccurred())
	deployments = renderedDeployments(g, manifest)
	g.Expect(deployments).To(HaveLen(3))
	want := map[string]string{
		chartRelease + "-controller-manager":   "--watch-label-selector=!sharding.fluxcd.io/key",
		chartRelease + "-controller-manager-a": "--watch-label-selector=sharding.fluxcd.io/key=a",
		chartRelease + "-controller-manager-b": "--watch-label-selector=sharding.fluxcd.io/key=b",
	}
	for name, arg := range want {
		d := deployments[name]
		g.Expect(d).NotTo(BeNil(), name)
		g.Expect(d.Spec.Template.Spec.Containers[0].Args).To(ContainElements("--leader-elect", arg), name)
		g.Expect(d.Spec.Selector.MatchLabels).To(Equal(d.Spec.Template.Labels), "%s: its pods match its selector", name)
	}
	g.Expect(deployments[chartRelease+"-controller-manager-a"].Spec.Selector.MatchLabels).
		To(HaveKeyWithValue("sharding.fluxcd.io/key", "a"))
}

// TestChart_ImageDigestPinsTheImage: image.digest (what `make image` prints)
// names the image by digest and wins over the tag.
func TestChart_ImageDigestPinsTheImage(t *testing.T) {
	g := NewWithT(t)
	digest := "sha256:" + strings.Repeat("ab", 32)
	manifest, err := renderChart(t, map[string]any{"image": map[string]any{
		"repository": "registry.example.com/kraan/kraan-operator", "tag": "v9", "digest": digest,
	}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(manifest).To(ContainSubstring("image: registry.example.com/kraan/kraan-operator@" + digest + "\n"))
	g.Expect(manifest).NotTo(ContainSubstring(":v9"))
}

// TestChart_CRDsAreGenerated fails when dist/chart/crds differs from
// config/crd/bases: run `make chart`.
func TestChart_CRDsAreGenerated(t *testing.T) {
	g := NewWithT(t)
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	generated, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(generated).NotTo(BeEmpty())
	inChart, err := filepath.Glob(filepath.Join(chartDir(t), "crds", "*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inChart).To(HaveLen(len(generated)), "run `make chart`")
	for _, f := range generated {
		want, err := os.ReadFile(f)
		g.Expect(err).NotTo(HaveOccurred())
		got, err := os.ReadFile(filepath.Join(chartDir(t), "crds", filepath.Base(f)))
		g.Expect(err).NotTo(HaveOccurred(), "run `make chart`")
		g.Expect(bytes.Equal(got, want)).To(BeTrue(), "%s is stale: run `make chart`", filepath.Base(f))
	}
}

func generatedRules(t *testing.T) []rbacv1.PolicyRule {
	t.Helper()
	g := NewWithT(t)
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	data, err := os.ReadFile(filepath.Join(root, "config", "rbac", "role.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	role := &rbacv1.ClusterRole{}
	g.Expect(yaml.Unmarshal(data, role)).To(Succeed())
	g.Expect(role.Rules).NotTo(BeEmpty())
	return role.Rules
}
