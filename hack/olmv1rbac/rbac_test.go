package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/test/testenv"
)

const (
	testNamespace = "kraan-system"
	testExtension = "kraan-operator"
)

// TestInstallerRBAC_InstallsTheBundle: issue #43, OLM v1. On a real API
// server, the installer ServiceAccount with exactly the RBAC this command
// derives creates (server-side dry run: authorisation and RBAC's escalation
// check run, nothing is stored) every object OLM v1 makes of the bundle: the
// CRDs, the roles and bindings of the CSV's permissions, the ServiceAccount,
// the Deployment, the Service and the extra ClusterRole. It holds no more:
// it may not read a Secret.
func TestInstallerRBAC_InstallsTheBundle(t *testing.T) {
	g := NewWithT(t)
	env, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	admin := env.Client
	g.Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}})).To(Succeed())
	b, err := readBundle(bundleDir(t))
	g.Expect(err).NotTo(HaveOccurred())
	for _, obj := range installerRBAC(b, testNamespace, testExtension) {
		g.Expect(admin.Create(ctx, obj.(client.Object))).To(Succeed())
	}

	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + testNamespace + ":" + installerName(testExtension)}
	installer, err := client.New(cfg, client.Options{Scheme: admin.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	for _, obj := range bundleObjects(g, b) {
		// The API server authorises before it looks for the name: the CRDs
		// the test environment installed exist already, and are updated
		// instead, as an upgrade does.
		err := installer.Create(ctx, obj, client.DryRunAll)
		if apierrors.IsAlreadyExists(err) {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
			g.Expect(installer.Get(ctx, client.ObjectKeyFromObject(obj), live)).To(Succeed())
			obj.SetResourceVersion(live.GetResourceVersion())
			err = installer.Update(ctx, obj, client.DryRunAll)
		}
		g.Expect(err).NotTo(HaveOccurred(), "the installer cannot create %s %s", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName())
	}
	err = installer.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "any"}, &corev1.Secret{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the installer reads Secrets: %v", err)
	err = installer.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "x"}}, client.DryRunAll)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the installer creates ConfigMaps: %v", err)
}

// TestInstallerRBAC_DocsShowIt: docs/olm.md shows this command's output for
// the shipped bundle, as it is.
func TestInstallerRBAC_DocsShowIt(t *testing.T) {
	g := NewWithT(t)
	root := filepath.Dir(bundleDir(t))
	cmd := exec.CommandContext(t.Context(), "go", "run", "./hack/olmv1rbac")
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	g.Expect(cmd.Run()).To(Succeed())
	doc, err := os.ReadFile(filepath.Join(root, "docs", "olm.md"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(doc)).To(ContainSubstring("```yaml\n"+out.String()+"```"),
		"docs/olm.md does not show `go run ./hack/olmv1rbac` as it prints now: paste its output there")
}

func bundleDir(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return filepath.Join(root, "bundle")
}

// bundleObjects are the objects OLM v1 makes of bundle b, as it names them:
// the manifests, the CSV's Deployments and ServiceAccounts, and a role and a
// binding for each of its permission sets.
func bundleObjects(g Gomega, b bundle) []client.Object {
	spec := b.csv.Spec.InstallStrategy.StrategySpec
	out := make([]client.Object, 0, len(b.manifests)+3*len(spec.ClusterPermissions)+2*len(spec.Permissions)+len(spec.DeploymentSpecs))
	for _, m := range b.manifests {
		obj := m.DeepCopy()
		if obj.GetKind() != "CustomResourceDefinition" && obj.GetKind() != "ClusterRole" {
			obj.SetNamespace(testNamespace)
		}
		out = append(out, obj)
	}
	for i, p := range spec.ClusterPermissions {
		name := b.csv.Name + "-cluster-" + strings.Repeat("x", i+1)
		out = append(out,
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: p.Rules},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: p.ServiceAccountName, Namespace: testNamespace}}},
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: p.ServiceAccountName}})
	}
	for i, p := range spec.Permissions {
		name := b.csv.Name + "-" + strings.Repeat("y", i+1)
		out = append(out,
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: name}, Rules: p.Rules},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: name},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: p.ServiceAccountName, Namespace: testNamespace}}})
	}
	for _, d := range spec.DeploymentSpecs {
		out = append(out, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: d.Name}, Spec: d.Spec})
	}
	g.Expect(out).NotTo(BeEmpty())
	return out
}
