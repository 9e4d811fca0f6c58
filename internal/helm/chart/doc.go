// Package chart gets the Helm chart of a HelmRelease, loaded and ready for
// Helm's actions, from one of three places:
//
//   - a Helm HTTP repository (a HelmRepository of type default): the
//     repository's index.yaml is fetched, the chart version chosen from the
//     release's semver range, the archive downloaded and checked against the
//     index's digest;
//   - an OCI registry (a HelmRepository of type oci): tags are listed, the
//     version chosen the same way and the chart layer pulled with oras-go,
//     every size capped (see below);
//   - a directory in an artifact that internal/source already fetched (a
//     GitRepository, Bucket or OCIRepository): the chart is loaded with its
//     vendored charts/ dependencies, which are never downloaded.
//
// A Fetcher keeps what it downloads so that many releases of one chart cost
// one download: repository indexes and OCI tag lists for a short TTL (then
// revalidated with If-None-Match/If-Modified-Since), chart archives by digest;
// all in LRUs bounded in bytes. Whatever is cached is served only within its
// cache scope: the same repository with the same credentials (see
// Repository.cacheScope), never to a request that merely names the same
// digest. Concurrent requests for the same index or archive share one
// download. Archives rather than loaded charts are kept because Helm's install
// and upgrade change the chart they are given (disabled subcharts are dropped
// from it), so every Fetch returns a chart of its own.
//
// Nothing a repository or registry sends is trusted to be small: indexes,
// archives, OCI manifests, layers, tag lists and every other registry answer
// have caps (Options), checked against the declared size before downloading
// and enforced again while reading, so a lying server costs at most the cap.
// A LimitError names the cap's operator flag. What a chart expands to is
// capped too (expand.go): an archive or layer is measured by streaming it,
// packaged subcharts expanded, before it is cached, and a chart directory
// before each load, so Helm's loader only ever reads charts within the caps.
// An index keeps only what resolving and downloading a version needs, and is
// parsed a batch of entries at a time (index.go, indexyaml.go), so neither
// its peak nor its resident memory follows what its publisher put in it; the
// index cache counts what indexes hold.
//
// Errors a user can act on are typed (ChartNotFoundError,
// VersionNotFoundError, AuthError, …) so the controller can tell them apart;
// IsTransient says which are worth a retry with backoff.
//
// The package only reads: it needs no Kubernetes client. The controller reads
// the HelmRepository and its Secrets and passes their fields as a Repository;
// CredentialsFromSecret (secretRef), TLSFromSecret (certSecretRef) and
// CredentialsFromDockerConfig (a kubernetes.io/dockerconfigjson secretRef)
// parse the Secrets' data as Flux does, checking PEM up front and never
// quoting a Secret's content in an error.
package chart
