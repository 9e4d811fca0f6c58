package helmrelease

import (
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"

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
