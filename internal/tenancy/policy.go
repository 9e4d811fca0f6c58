package tenancy

import (
	"fmt"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/manifest"
)

// DefaultServiceAccount is the account of its own namespace a tenant's
// HelmRelease acts as under the lockdown when --default-service-account is
// not set: every namespace has it, and it holds no rights until the
// namespace's admin grants some, which RBAC lets them grant only from rights
// of their own.
const DefaultServiceAccount = "default"

// Policy says as whom the operator acts for a HelmRelease that names no
// ServiceAccount and no remote cluster.
type Policy struct {
	// Lockdown is --multi-tenancy-lockdown: on, tenants' HelmReleases act
	// as an account of their namespace; off, as the operator (Flux's
	// behaviour without --default-service-account).
	Lockdown bool
	// ServiceAccount is --default-service-account: the account of the
	// HelmRelease's namespace it acts as; under the lockdown,
	// DefaultServiceAccount when empty.
	ServiceAccount string
	// PlatformNamespaces are the operator's own namespace and
	// --platform-namespaces: only the platform writes there, so their
	// HelmReleases act as the operator.
	PlatformNamespaces []string
	// Sealer checks the seal of a layer's HelmRelease.
	Sealer *Sealer
}

// Identity is the policy's answer for one HelmRelease.
type Identity struct {
	// ServiceAccount to impersonate in the HelmRelease's namespace; ""
	// acts as the operator.
	ServiceAccount string
	// Unsealed, when set, is why a HelmRelease labelled as a layer's is not
	// acted on: its spec is not what the layer applied. It waits for the
	// layer to apply it again rather than act as a tenant (which would fail,
	// and could remediate a platform release by uninstalling it) or as the
	// platform (which the edit must not gain). Deleting it uninstalls as
	// ServiceAccount, the tenant's account: an edited spec may name another
	// release.
	Unsealed error
}

// IdentityOf is the identity hr acts with when it names no ServiceAccount.
func (p Policy) IdentityOf(hr *kraanv1.HelmRelease) Identity {
	if hr.Spec.ServiceAccountName != "" || hr.Spec.KubeConfig != nil {
		return Identity{ServiceAccount: hr.Spec.ServiceAccountName}
	}
	if !p.Lockdown {
		return Identity{ServiceAccount: p.ServiceAccount}
	}
	for _, ns := range p.PlatformNamespaces {
		if hr.Namespace == ns {
			return Identity{}
		}
	}
	if layer := hr.Labels[manifest.LayerLabel]; layer != "" {
		if p.Sealer.Sealed(layer, hr) {
			return Identity{}
		}
		return Identity{ServiceAccount: p.tenantAccount(), Unsealed: fmt.Errorf("HelmRelease %s/%s is labelled %s=%s, but its spec is not the one that "+
			"layer applied (it was edited since, or the layer has not applied it since the operator was upgraded): "+
			"it acts only once layer %s applies it again, or, without that label, as ServiceAccount %s of its namespace",
			hr.Namespace, hr.Name, manifest.LayerLabel, layer, layer, p.tenantAccount())}
	}
	return Identity{ServiceAccount: p.tenantAccount()}
}

// tenantAccount is the account a tenant's HelmRelease acts as.
func (p Policy) tenantAccount() string {
	if p.ServiceAccount != "" {
		return p.ServiceAccount
	}
	return DefaultServiceAccount
}
