// Package tenancy decides as whom the operator acts for a HelmRelease, so
// that a namespace editor can make it do no more than that namespace's own
// accounts may.
//
// Under the multi-tenancy lockdown (the default) a HelmRelease that names
// no ServiceAccount acts as --default-service-account ("default") of its
// namespace, unless the platform wrote it: it lives in the operator's
// namespace or one of --platform-namespaces, or an AddonsLayer applied it and
// its spec is still exactly what the layer applied (a Seal the layer puts on
// it, which only the operator can make). Without the lockdown it acts as
// the operator, as Flux does without --default-service-account.
package tenancy
