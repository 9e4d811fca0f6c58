package plugin_test

import (
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kraan-io/kraan-operator/internal/plugin"
)

// expectOneLineError checks that a command failed with one line on
// standard error, no stack trace, containing want.
func expectOneLineError(t *testing.T, r result, want string) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(r.code).To(BeNumerically(">=", plugin.ExitError), "stdout: %s", r.stdout)
	g.Expect(strings.Count(r.stderr, "\n")).To(Equal(1), "one line: %q", r.stderr)
	g.Expect(r.stderr).To(HavePrefix("Error: "))
	g.Expect(r.stderr).NotTo(ContainSubstring("goroutine"))
	g.Expect(r.stderr).To(ContainSubstring(want))
}

func testBadInputUnknownLayer(t *testing.T) {
	for _, args := range [][]string{{"diff", "layer", "nope"}, {"tree", "layer", "nope"}, {"get", "layer", "nope"}, {"events", "layer", "nope"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			expectOneLineError(t, kraan(t, args...), "AddonsLayer nope not found")
		})
	}
}

func testBadInputLayerSourceMissing(t *testing.T) {
	g := NewWithT(t)
	l := newLayer("orphan", "./layers/top")
	l.Spec.Source.Name = "missing"
	l.Spec.Hold = true
	g.Expect(e.Client.Create(t.Context(), l)).To(Succeed())
	defer func() { g.Expect(e.Client.Delete(t.Context(), l)).To(Succeed()) }()
	expectOneLineError(t, kraan(t, "diff", "layer", "orphan"), "layer orphan: layer source: GitRepository/flux-system/missing not found")
}

// TestBadInput_NoSecretsPermission: a user who may read HelmReleases and
// their sources but not Secrets cannot read Helm's release storage.
func testBadInputNoSecretsPermission(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "plugin-no-secrets"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"kraan.io", "source.toolkit.fluxcd.io"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}},
	}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "plugin-no-secrets"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "viewer"}}}
	g.Expect(e.Client.Create(ctx, role)).To(Succeed())
	g.Expect(e.Client.Create(ctx, binding)).To(Succeed())
	defer func() {
		g.Expect(e.Client.Delete(ctx, binding)).To(Succeed())
		g.Expect(e.Client.Delete(ctx, role)).To(Succeed())
	}()
	r := kraan(t, "--as", "viewer", "diff", "helmrelease", "-n", ns, releaseName)
	expectOneLineError(t, r, `secrets is forbidden: User "viewer" cannot list resource "secrets"`)
	g.Expect(r.stderr).To(ContainSubstring("ask for that permission"))
}

// TestBadInput_NoCRDs runs against a bare API server (envtest, no CRDs).
func testBadInputNoCRDs(t *testing.T) {
	g := NewWithT(t)
	bare := &envtest.Environment{}
	cfg, err := bare.Start()
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(bare.Stop()).To(Succeed()) }()
	user, err := bare.ControlPlane.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, cfg)
	g.Expect(err).NotTo(HaveOccurred())
	kubeconfig, err := user.KubeConfig()
	g.Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(writeFile(path, kubeconfig)).To(Succeed())
	for _, args := range [][]string{{"get", "layers"}, {"graph"}, {"diff", "layer", "base"}} {
		r := runWith(t, path, args...)
		expectOneLineError(t, r, "the cluster has no kraan.io API")
	}
}
