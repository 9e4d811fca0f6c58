package manifest

import (
	"math/rand/v2"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetAPIVersion(apiVersion)
	o.SetKind(kind)
	o.SetNamespace(namespace)
	o.SetName(name)
	return o
}

// applyOrdered is a layer in the order SortForApply must produce.
func applyOrdered() []*unstructured.Unstructured {
	return []*unstructured.Unstructured{
		obj("v1", "Namespace", "", "apps"),
		obj("v1", "Namespace", "", "podinfo"),
		obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets.example.com"),
		obj("storage.k8s.io/v1", "StorageClass", "", "fast"),
		obj("v1", "ServiceAccount", "podinfo", "podinfo"),
		obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "podinfo"),
		obj("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "podinfo"),
		obj("rbac.authorization.k8s.io/v1", "Role", "podinfo", "podinfo"),
		obj("rbac.authorization.k8s.io/v1", "RoleBinding", "podinfo", "podinfo"),
		obj("v1", "Secret", "podinfo", "creds"),
		obj("v1", "ConfigMap", "apps", "values"),
		obj("v1", "ConfigMap", "podinfo", "config"),
		obj("v1", "PersistentVolumeClaim", "podinfo", "data"),
		obj("v1", "Service", "podinfo", "podinfo"),
		obj("apps/v1", "Deployment", "podinfo", "podinfo"),
		obj("apps/v1", "StatefulSet", "podinfo", "cache"),
		obj("batch/v1", "CronJob", "podinfo", "report"),
		obj("networking.k8s.io/v1", "Ingress", "podinfo", "podinfo"),
		obj("coordination.k8s.io/v1", "Lease", "podinfo", "lock"), // a built-in not listed
		obj("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "", "podinfo"),
		obj("example.com/v1", "Widget", "podinfo", "w"),
		obj("kraan.io/v1alpha1", "HelmRelease", "apps", "podinfo"),
		obj("serving.knative.dev/v1", "Service", "podinfo", "knative"), // not the built-in Service
		obj("source.toolkit.fluxcd.io/v1", "HelmRepository", "apps", "podinfo"),
	}
}

func TestSortForApply_order(t *testing.T) {
	g := NewWithT(t)
	want := ids(applyOrdered())
	rng := rand.New(rand.NewPCG(7, 11))
	for range 20 {
		objs := applyOrdered()
		rng.Shuffle(len(objs), func(i, j int) { objs[i], objs[j] = objs[j], objs[i] })
		SortForApply(objs)
		g.Expect(ids(objs)).To(Equal(want))
	}
}

func TestSortForApply_readLayer(t *testing.T) {
	g := NewWithT(t)
	res, err := Read("testdata/plain", Options{})
	g.Expect(err).NotTo(HaveOccurred())
	SortForApply(res.Objects)
	g.Expect(ids(res.Objects)).To(Equal([]string{
		"Namespace podinfo",
		"ServiceAccount podinfo/podinfo",
		"ConfigMap podinfo/podinfo-config",
		"Service podinfo/podinfo",
		"Deployment podinfo/podinfo",
	}))
}
