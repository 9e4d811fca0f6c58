package suite

import (
	"testing"

	"github.com/onsi/gomega"
	release "helm.sh/helm/v4/pkg/release/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// ApplyMethods are the apply_method of every record of a release stored in
// namespace, by revision: "ssa" server-side, "csa" client-side, empty on
// records Helm 3 wrote.
func ApplyMethods(t testing.TB, g gomega.Gomega, cfg *rest.Config, namespace, name string) map[int]string {
	t.Helper()
	history, err := recordStorage(t, cfg, namespace).History(name)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	out := map[int]string{}
	for _, r := range history {
		rel, ok := r.(*release.Release)
		g.Expect(ok).To(gomega.BeTrue(), "release record of type %T", r)
		out[rel.Version] = rel.ApplyMethod
	}
	return out
}

// FieldManagers say who wrote obj and how, as "manager:operation" entries of
// its managedFields: "kraan-operator:Apply" is the operator applying
// server-side, "kraan-operator:Update" client-side. Status subresource
// entries are left out: controllers write those whatever the apply method.
func FieldManagers(obj metav1.Object) []string {
	var out []string
	for _, f := range obj.GetManagedFields() {
		if f.Subresource == "" {
			out = append(out, f.Manager+":"+string(f.Operation))
		}
	}
	return out
}
