package suite

import (
	"context"
	"fmt"
	"testing"

	"github.com/onsi/gomega"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/internal/helm"
)

// EditRecord changes the newest release record of a release stored in
// namespace, as a tenant who may edit the Secrets of its namespace can: the
// record keeps the labels it had, its signature included.
func EditRecord(t testing.TB, cfg *rest.Config, namespace, name string, change func(*release.Release)) {
	t.Helper()
	g := gomega.NewWithT(t)
	records := recordStorage(t, cfg, namespace)
	last, err := records.Last(name)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	rel, ok := last.(*release.Release)
	g.Expect(ok).To(gomega.BeTrue(), "release record of type %T", last)
	change(rel)
	g.Expect(records.Update(rel)).To(gomega.Succeed())
}

// ResignRecord edits the newest record as EditRecord does, then signs it
// with key for the object it was signed for (its helm.RecordOwnerLabel), as
// the operator holding that key would have written it: tests that simulate
// an interrupted action edit records this way.
func ResignRecord(t testing.TB, cfg *rest.Config, key []byte, namespace, name string, change func(*release.Release)) {
	t.Helper()
	EditRecord(t, cfg, namespace, name, func(rel *release.Release) {
		change(rel)
		owner := types.UID(rel.Labels[helm.RecordOwnerLabel])
		gomega.NewWithT(t).Expect(helm.SignRecord(key, namespace, owner, rel)).To(gomega.Succeed())
	})
}

func recordStorage(t testing.TB, cfg *rest.Config, namespace string) *storage.Storage {
	cs, err := kubernetes.NewForConfig(cfg)
	gomega.NewWithT(t).Expect(err).NotTo(gomega.HaveOccurred())
	return storage.Init(driver.NewSecrets(cs.CoreV1().Secrets(namespace)))
}

// AddForeignObject adds a ConfigMap of kube-system to a record's manifest:
// an object the release never made.
func AddForeignObject(rel *release.Release, name string) {
	rel.Manifest += fmt.Sprintf("\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: kube-system\ndata:\n  a: b\n", name)
}

// AddClusterAdminHook adds a pre-delete hook to a record that binds
// cluster-admin to the default ServiceAccount of tenantNamespace: run with
// the operator's identity, it would hand the tenant the cluster.
func AddClusterAdminHook(rel *release.Release, name, tenantNamespace string) {
	rel.Hooks = append(rel.Hooks, &release.Hook{
		Name: name, Kind: "ClusterRoleBinding", Path: "templates/escalate.yaml",
		Events: []release.HookEvent{release.HookPreDelete, release.HookPreUpgrade, release.HookPreRollback},
		Manifest: fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: %s
  annotations:
    helm.sh/hook: pre-delete,pre-upgrade,pre-rollback
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cluster-admin
subjects:
- kind: ServiceAccount
  name: default
  namespace: %s
`, name, tenantNamespace),
	})
}

// NewForeignObject creates the kube-system ConfigMap AddForeignObject names,
// deleted when the test ends, and returns its UID.
func NewForeignObject(t testing.TB, c client.Client, name string) string {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name}, Data: map[string]string{"a": "b"}}
	gomega.NewWithT(t).Expect(c.Create(context.Background(), cm)).To(gomega.Succeed())
	t.Cleanup(func() { _ = c.Delete(context.Background(), cm) })
	return string(cm.UID)
}

// ForeignObjectUID is the UID of the kube-system ConfigMap name, or "" when
// it is gone.
func ForeignObjectUID(g gomega.Gomega, c client.Client, name string) string {
	cm := &corev1.ConfigMap{}
	err := c.Get(context.Background(), client.ObjectKey{Namespace: "kube-system", Name: name}, cm)
	if apierrors.IsNotFound(err) {
		return ""
	}
	g.Expect(err).NotTo(gomega.HaveOccurred())
	return string(cm.UID)
}

// ClusterRoleBindingExists says whether the ClusterRoleBinding name exists.
func ClusterRoleBindingExists(g gomega.Gomega, c client.Client, name string) bool {
	err := c.Get(context.Background(), client.ObjectKey{Name: name}, &rbacv1.ClusterRoleBinding{})
	if apierrors.IsNotFound(err) {
		return false
	}
	g.Expect(err).NotTo(gomega.HaveOccurred())
	return true
}

// CopyRecordSecret copies the record Secret name of namespace as revision
// version of release, as a tenant who may write the Secrets of its
// namespace can: the copy carries release's name and version labels (Helm
// finds records by them) and everything else of the original, its
// signature included.
func CopyRecordSecret(t testing.TB, c client.Client, namespace, name, release string, version int) {
	t.Helper()
	g := gomega.NewWithT(t)
	original := &corev1.Secret{}
	g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, original)).To(gomega.Succeed())
	labels := map[string]string{}
	for k, v := range original.Labels {
		labels[k] = v
	}
	labels["name"], labels["version"] = release, fmt.Sprint(version)
	cp := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("sh.helm.release.v1.%s.v%d", release, version), Labels: labels},
		Type:       original.Type, Data: original.Data,
	}
	g.Expect(c.Create(context.Background(), cp)).To(gomega.Succeed())
}
