package helm

import (
	"bytes"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/kube"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/resource"
)

func TestChartKinds_LiteralTopLevelKindsWithTheirGroup(t *testing.T) {
	g := NewWithT(t)
	sub := &chart.Chart{Metadata: &chart.Metadata{Name: "sub"}, Templates: []*common.File{
		{Name: "templates/job.yaml", Data: []byte("apiVersion: batch/v1\nkind: Job\n")},
	}}
	c := &chart.Chart{Metadata: &chart.Metadata{Name: "top"}, Templates: []*common.File{
		{Name: "templates/objects.yaml", Data: []byte(`{{- $x := .Values.x -}}
apiVersion: apps/v1   # a comment
kind: StatefulSet
spec:
  template:
    spec:
      volumes:
        - configMap:
            kind: NotAKind
---
# a second document of the same template
kind: "Service"
apiVersion: v1
---
apiVersion: {{ include "rbac.apiVersion" . }}
kind: Role
---
apiVersion: v1
kind: {{ .Values.kind }}
`)},
		{Name: "templates/_helpers.tpl", Data: []byte("{{- define \"x\" -}}\napiVersion: v1\nkind: ConfigMap\n{{- end }}\n")},
		{Name: "templates/NOTES.txt", Data: []byte("Installed.\n")},
	}}
	c.SetDependencies(sub)
	g.Expect(ChartKinds(c)).To(ConsistOf(
		schema.GroupKind{Group: "apps", Kind: "StatefulSet"},
		schema.GroupKind{Kind: "Service"},
		schema.GroupKind{Group: AnyGroup, Kind: "Role"},
		schema.GroupKind{Kind: "ConfigMap"},
		schema.GroupKind{Group: "batch", Kind: "Job"},
	))
}

func TestChartKinds_HabitatChart(t *testing.T) {
	g := NewWithT(t)
	c, err := LoadChart("../../helm-charts/habitat")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ChartKinds(c)).To(ConsistOf(schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, schema.GroupKind{Kind: "Service"}))
}

// boundsMapper knows a namespaced ConfigMap and StatefulSet and a
// cluster-scoped ClusterRoleBinding.
func boundsMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"}, meta.RESTScopeRoot)
	return m
}

func TestBoundsPostRenderer_Run(t *testing.T) {
	bounds := &Bounds{Owner: "Gadget shop/one", Namespace: "shop", Kinds: []schema.GroupKind{
		{Kind: "ConfigMap"}, {Group: "apps", Kind: "StatefulSet"}, {Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"},
	}}
	for _, tc := range []struct {
		name, manifest, err string
		clusterScoped       bool
	}{
		{name: "own namespace, implicit and explicit", manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n" +
			"apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: b, namespace: shop}\n"},
		{name: "another namespace", manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: kube-system}\n",
			err: "the chart rendered ConfigMap kube-system/a, which Gadget shop/one may not create: objects may only be created in its own namespace shop"},
		{name: "cluster-scoped", manifest: "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: pwned}\n",
			err: "the chart rendered ClusterRoleBinding.rbac.authorization.k8s.io pwned, which Gadget shop/one may not create: it is cluster-scoped"},
		{name: "cluster-scoped allowed", clusterScoped: true,
			manifest: "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: allowed}\n"},
		{name: "undeclared kind", manifest: "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n",
			err: "the chart rendered Secret s, which Gadget shop/one may not create: its chart declares no Secret"},
		{name: "declared kind in another group", manifest: "apiVersion: example.com/v1\nkind: ConfigMap\nmetadata: {name: c}\n",
			err: "its chart declares no ConfigMap.example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			b := *bounds
			b.ClusterScoped = tc.clusterScoped
			p := &BoundsPostRenderer{Bounds: &b, Mapper: boundsMapper()}
			out, err := p.Run(bytes.NewBufferString(tc.manifest))
			if tc.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
				var oob *OutOfBoundsError
				g.Expect(errors.As(err, &oob)).To(BeTrue())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(out.String()).To(Equal(tc.manifest))
		})
	}
}

// recordingClient is the Helm kube client a guard wraps; it records what
// reached it.
type recordingClient struct {
	helmKubeClient
	created, deleted kube.ResourceList
}

func (c *recordingClient) Create(r kube.ResourceList, _ ...kube.ClientCreateOption) (*kube.Result, error) {
	c.created = append(c.created, r...)
	return &kube.Result{}, nil
}

func (c *recordingClient) Delete(r kube.ResourceList, _ metav1.DeletionPropagation) (*kube.Result, []error) {
	c.deleted = append(c.deleted, r...)
	return &kube.Result{}, nil
}

func info(gvk schema.GroupVersionKind, scope meta.RESTScope, namespace, name string) *resource.Info {
	return &resource.Info{Namespace: namespace, Name: name, Mapping: &meta.RESTMapping{GroupVersionKind: gvk, Scope: scope}}
}

func TestBounds_Guard_RefusesHooksOutsideAndDeletesOnlyWithin(t *testing.T) {
	g := NewWithT(t)
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	crb := schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"}
	inner := &recordingClient{}
	guarded := (&Bounds{Owner: "Gadget shop/one", Namespace: "shop", Kinds: []schema.GroupKind{{Kind: "ConfigMap"}}}).guard(inner)

	own := info(cm, meta.RESTScopeNamespace, "shop", "hook")
	elsewhere := info(cm, meta.RESTScopeNamespace, "kube-system", "victim")
	cluster := info(crb, meta.RESTScopeRoot, "", "pwned")
	_, err := guarded.Create(kube.ResourceList{own, cluster})
	g.Expect(err).To(MatchError(ContainSubstring("ClusterRoleBinding.rbac.authorization.k8s.io pwned")))
	g.Expect(inner.created).To(BeEmpty(), "nothing is created when one object is out of bounds")
	_, err = guarded.Create(kube.ResourceList{own})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inner.created).To(ConsistOf(own))

	_, errs := guarded.Delete(kube.ResourceList{own, elsewhere, cluster}, metav1.DeletePropagationBackground)
	g.Expect(errs).To(BeEmpty())
	g.Expect(inner.deleted).To(ConsistOf(own))

	inner.deleted = nil
	res, errs := guarded.Delete(kube.ResourceList{elsewhere}, metav1.DeletePropagationBackground)
	g.Expect(errs).To(BeEmpty(), "a hook outside the bounds is refused at its creation, not at its deletion")
	g.Expect(res).NotTo(BeNil())
	g.Expect(inner.deleted).To(BeEmpty())

	var nilBounds *Bounds
	g.Expect(nilBounds.guard(inner)).To(BeIdenticalTo(inner))
}
