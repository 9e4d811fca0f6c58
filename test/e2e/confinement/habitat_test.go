package confinement_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

func newHabitat(ns, name string) *habitatv1.Habitat {
	return &habitatv1.Habitat{
		// The kind is set for conditionMessage, which reads it back unstructured.
		TypeMeta:   metav1.TypeMeta{APIVersion: habitatv1.GroupVersion.String(), Kind: "Habitat"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: habitatv1.HabitatSpec{
			Image: "habitat/redis:1", Count: 1,
			Service: habitatv1.ServiceSpec{Name: "redis", Topology: habitatv1.TopologyNone},
		},
	}
}

// TestHabitat_NewlineMountPathIsRefused is issue #26's attack: a mountPath
// that closes the StatefulSet and adds a ClusterRoleBinding to
// cluster-admin. The API server refuses the Habitat, and no binding appears.
func TestHabitat_NewlineMountPathIsRefused(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t, "tenant-mountpath")
	h := newHabitat(ns, "web")
	h.Spec.PersistentStorage = &habitatv1.PersistentStorage{
		Size: resource.MustParse("1Gi"),
		MountPath: "/data\n---\n" + fmtBinding("mountpath", ns) +
			"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tail\ndata:\n  x: |2\n",
	}
	err := k8s.Create(context.Background(), h)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "the Habitat was accepted: %v", err)
	g.Expect(err.Error()).To(ContainSubstring("spec.persistentStorage.mountPath"))
	absent(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "pwned-mountpath"}})
}

func fmtBinding(name, ns string) string {
	return "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: pwned-" + name +
		"\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin\n" +
		"subjects:\n  - kind: ServiceAccount\n    name: default\n    namespace: " + ns + "\n"
}

// deployerRBAC reads config/samples/tenancy/habitat-deployer-rbac.yaml, the
// documented ServiceAccount, Role and RoleBinding, for namespace ns.
func deployerRBAC(t *testing.T, ns string) []client.Object {
	t.Helper()
	root, err := testenv.RepoRoot()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	data, err := os.ReadFile(filepath.Join(root, "config", "samples", "tenancy", "habitat-deployer-rbac.yaml"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []client.Object
	for {
		obj := &unstructured.Unstructured{}
		if err := decoder.Decode(&obj.Object); errors.Is(err, io.EOF) {
			break
		}
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		obj.SetNamespace(ns)
		objs = append(objs, obj)
	}
	NewWithT(t).Expect(objs).To(HaveLen(3))
	return objs
}

// TestHabitat_ActionsImpersonateTheWatchServiceAccount: the Habitat watch
// names habitat-deployer. Without rights, the install is forbidden and
// nothing is rendered into the namespace; with the documented Role it
// deploys; with the RoleBinding gone, the uninstall is forbidden too and the
// Habitat is kept until the rights are back.
func TestHabitat_ActionsImpersonateTheWatchServiceAccount(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t, "tenant-impersonation")
	rbac := deployerRBAC(t, ns)
	g.Expect(k8s.Create(ctx, rbac[0])).To(Succeed()) // the ServiceAccount alone: no rights
	h := newHabitat(ns, "web")
	g.Expect(k8s.Create(ctx, h)).To(Succeed())
	g.Eventually(conditionMessage(h, "Ready"), timeout, poll).Should(And(
		HavePrefix("False/"), ContainSubstring("forbidden"),
		ContainSubstring(`User "system:serviceaccount:`+ns+`:`+habitatServiceAccount+`"`)))
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	absent(t, sts)
	absent(t, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}})

	// The documented Role and RoleBinding: the release deploys.
	for _, obj := range rbac[1:] {
		g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	}
	g.Eventually(conditionMessage(h, "Deployed"), timeout, poll).Should(HavePrefix("True/InstallSuccessful"))
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(sts), sts)).To(Succeed())

	// Uninstall as the account too: without its binding, the Habitat stays.
	binding := rbac[2]
	g.Expect(k8s.Delete(ctx, binding)).To(Succeed())
	// The authorizer sees the binding go a moment later, from its informer.
	g.Eventually(func() bool { return apierrors.IsForbidden(listSecretsAs(ns, habitatServiceAccount)) },
		timeout, poll).Should(BeTrue())
	g.Expect(k8s.Delete(ctx, h)).To(Succeed())
	g.Consistently(func() error { return k8s.Get(ctx, client.ObjectKeyFromObject(h), &habitatv1.Habitat{}) },
		settle, poll).Should(Succeed(), "the Habitat was let go although its uninstall is forbidden")
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(sts), sts)).To(Succeed())

	binding.SetResourceVersion("")
	g.Expect(k8s.Create(ctx, binding)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(h), &habitatv1.Habitat{}))
	}, timeout, poll).Should(BeTrue())
}

// listSecretsAs lists the Secrets of ns as its ServiceAccount sa.
func listSecretsAs(ns, sa string) error {
	cfg := rest.CopyConfig(adminConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + sa}
	c, err := client.New(cfg, client.Options{Scheme: testenv.Scheme})
	if err != nil {
		return err
	}
	return c.List(context.Background(), &corev1.SecretList{}, client.InNamespace(ns))
}
