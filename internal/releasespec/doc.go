// Package releasespec resolves what a HelmRelease asks for into what the Helm
// engine needs: its chart from Flux sources (SourceCharts: a HelmRepository's
// index or a path in a GitRepository, Bucket or OCIRepository artifact), its
// target (release name, namespaces, identity, remote cluster), its values
// composed from valuesFrom, and a Preview of their render. The HelmRelease
// controller and the kubectl plugin use it alike: neither reaches into the
// other, and the plugin previews exactly what a reconcile would do.
package releasespec
