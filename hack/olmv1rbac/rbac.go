package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// bundle is what the RBAC is derived from: the CSV and the other manifests.
type bundle struct {
	csv *operatorsv1alpha1.ClusterServiceVersion
	// manifests are every other object of manifests/.
	manifests []*unstructured.Unstructured
}

func readBundle(dir string) (bundle, error) {
	var b bundle
	files, err := os.ReadDir(filepath.Join(dir, "manifests"))
	if err != nil {
		return b, err
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, "manifests", f.Name()))
		if err != nil {
			return b, err
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &obj.Object); err != nil {
			return b, fmt.Errorf("%s: %w", f.Name(), err)
		}
		if obj.GetKind() != "ClusterServiceVersion" {
			b.manifests = append(b.manifests, obj)
			continue
		}
		b.csv = &operatorsv1alpha1.ClusterServiceVersion{}
		if err := yaml.Unmarshal(data, b.csv); err != nil {
			return b, fmt.Errorf("%s: %w", f.Name(), err)
		}
	}
	if b.csv == nil {
		return b, fmt.Errorf("%s holds no ClusterServiceVersion", dir)
	}
	return b, nil
}

// Verbs the installer needs on an object it creates, then owns: list and
// watch are not restricted by name (the API refuses resourceNames there),
// create cannot be (the object has no name yet when it is authorised).
var (
	unnamedVerbs = []string{"create", "list", "watch"}
	namedVerbs   = []string{"get", "update", "patch", "delete"}
)

// installerName names the installer's ServiceAccount and its RBAC.
func installerName(extension string) string { return extension + "-installer" }

// installerRBAC is the installer ServiceAccount of extension in namespace
// and its RBAC: a ClusterRole for the cluster-scoped objects (the CRDs by
// name, the CSV's cluster permissions), a Role for the namespace's (the
// Deployments, ServiceAccounts and Services by name, the CSV's namespaced
// permissions), and their bindings.
//
// The operator's own ClusterRole grants every verb on every resource (a
// layer applies any kind, Helm installs any chart); the Kubernetes API lets
// an account create a role only with permissions it holds, or with the verb
// escalate, and bind one only with bind. The installer gets escalate and
// bind on roles and cluster roles, rather than * on *: it can grant what the
// operator needs, and cannot itself read a Secret or delete a Pod.
func installerRBAC(b bundle, namespace, extension string) []any {
	name := installerName(extension)
	var crds, services []string
	for _, m := range b.manifests {
		switch m.GetKind() {
		case "CustomResourceDefinition":
			crds = append(crds, m.GetName())
		case "Service":
			services = append(services, m.GetName())
		}
	}
	spec := b.csv.Spec.InstallStrategy.StrategySpec
	deployments := make([]string, 0, len(spec.DeploymentSpecs))
	var accounts []string
	for _, d := range spec.DeploymentSpecs {
		deployments = append(deployments, d.Name)
		accounts = appendNew(accounts, d.Spec.Template.Spec.ServiceAccountName)
	}
	for _, p := range append(slices.Clone(spec.ClusterPermissions), spec.Permissions...) {
		accounts = appendNew(accounts, p.ServiceAccountName)
	}
	slices.Sort(crds)
	slices.Sort(accounts)
	roleVerbs := append(append(slices.Clone(unnamedVerbs), namedVerbs...), "bind", "escalate")
	clusterRules := []rbacv1.PolicyRule{
		{APIGroups: []string{"olm.operatorframework.io"}, Resources: []string{"clusterextensions/finalizers"},
			Verbs: []string{"update"}, ResourceNames: []string{extension}},
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: unnamedVerbs},
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: namedVerbs, ResourceNames: crds},
		// OLM v1 names the roles it makes of the CSV's permissions itself.
		{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles", "clusterrolebindings"}, Verbs: roleVerbs},
	}
	namespaceRules := []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: unnamedVerbs},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: namedVerbs, ResourceNames: deployments},
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: unnamedVerbs},
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: namedVerbs, ResourceNames: accounts},
		{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles", "rolebindings"}, Verbs: roleVerbs},
	}
	if len(services) > 0 {
		namespaceRules = append(namespaceRules,
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: unnamedVerbs},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: namedVerbs, ResourceNames: services})
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace}}
	meta := func(kind, apiVersion string, ns string) (metav1.TypeMeta, metav1.ObjectMeta) {
		return metav1.TypeMeta{Kind: kind, APIVersion: apiVersion}, metav1.ObjectMeta{Name: name, Namespace: ns}
	}
	sa := &corev1.ServiceAccount{}
	sa.TypeMeta, sa.ObjectMeta = meta("ServiceAccount", "v1", namespace)
	cr := &rbacv1.ClusterRole{Rules: clusterRules}
	cr.TypeMeta, cr.ObjectMeta = meta("ClusterRole", "rbac.authorization.k8s.io/v1", "")
	crb := &rbacv1.ClusterRoleBinding{Subjects: subject, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}}
	crb.TypeMeta, crb.ObjectMeta = meta("ClusterRoleBinding", "rbac.authorization.k8s.io/v1", "")
	role := &rbacv1.Role{Rules: namespaceRules}
	role.TypeMeta, role.ObjectMeta = meta("Role", "rbac.authorization.k8s.io/v1", namespace)
	rb := &rbacv1.RoleBinding{Subjects: subject, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}}
	rb.TypeMeta, rb.ObjectMeta = meta("RoleBinding", "rbac.authorization.k8s.io/v1", namespace)
	return []any{sa, cr, crb, role, rb}
}

func appendNew(list []string, s string) []string {
	if s == "" || slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
