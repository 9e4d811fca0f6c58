package helmrelease

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/helm"
)

func TestServiceAccountOf(t *testing.T) {
	for _, tc := range []struct {
		impersonate     string
		namespace, name string
		ok              bool
	}{
		{impersonate: "system:serviceaccount:apps:deployer", namespace: "apps", name: "deployer", ok: true},
		{impersonate: ""},
		{impersonate: "jane"},
		{impersonate: "system:serviceaccount:apps"},
	} {
		g := NewWithT(t)
		ns, name, ok := serviceAccountOf(helm.Target{Impersonate: tc.impersonate})
		g.Expect(ok).To(Equal(tc.ok), tc.impersonate)
		if ok {
			g.Expect(ns + "/" + name).To(Equal(tc.namespace + "/" + tc.name))
		}
	}
}

func TestUninstallBlocker(t *testing.T) {
	g := NewWithT(t)
	gone := &goneError{what: "ServiceAccount apps/deployer"}
	g.Expect(uninstallBlocker(nil)).To(BeEmpty())
	g.Expect(uninstallBlocker(errors.New("connection refused"))).To(BeEmpty())
	g.Expect(uninstallBlocker(gone)).To(Equal("ServiceAccount apps/deployer does not exist"))
	g.Expect(uninstallBlocker(fmt.Errorf("wrapped: %w", gone))).To(Equal("ServiceAccount apps/deployer does not exist"))
}

func TestReconciler_namespaceLetGo(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", errors.New("cannot list"))
	for _, tc := range []struct {
		name     string
		deleting time.Duration // how long ago the namespace began to be deleted; 0: it is not
		err      error
		letGo    bool
	}{
		{name: "namespace not being deleted", err: forbidden},
		{name: "refused in a namespace being deleted", deleting: time.Second, err: forbidden, letGo: true},
		{name: "failing for a while", deleting: time.Minute, err: errors.New("connection refused")},
		{name: "failing past the grace", deleting: namespaceUninstallGrace + time.Minute, err: errors.New("connection refused"), letGo: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}
			if tc.deleting > 0 {
				ns.DeletionTimestamp = &metav1.Time{Time: time.Now().Add(-tc.deleting)}
				ns.Finalizers = []string{"kubernetes"}
			}
			r := &Reconciler{APIReader: newFakeClient(ns)}
			hr := &kraanv1.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "edge"}}
			why, letGo, err := r.namespaceLetGo(context.Background(), hr, tc.err)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(letGo).To(Equal(tc.letGo))
			if letGo {
				g.Expect(why).To(And(ContainSubstring("namespace apps is being deleted"), ContainSubstring(tc.err.Error())))
			}
		})
	}
}

// newFakeClient serves objs; only for the small functions above.
func newFakeClient(objs ...client.Object) client.Client {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}
