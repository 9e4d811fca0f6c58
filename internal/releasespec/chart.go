package releasespec

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"time"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/helm"
	"github.com/kraan-io/kraan-operator/internal/helm/chart"
	"github.com/kraan-io/kraan-operator/internal/outcome"
	"github.com/kraan-io/kraan-operator/internal/source"
)

// SourceRetry is how soon a chart source that does not exist yet, or has no
// artifact yet, is looked at again: its watch usually brings the release back
// sooner.
const SourceRetry = 30 * time.Second

// ChartGetter returns the chart a HelmRelease asks for, the digest of its
// content and the source revision it was resolved from.
type ChartGetter interface {
	GetChart(ctx context.Context, hr *kraanv1.HelmRelease) (*SourcedChart, error)
}

// SourcedChart is a release's chart and where it came from.
type SourcedChart struct {
	Chart *helm.Chart
	// Digest identifies the desired chart (see ChartDigestFor).
	Digest string
	// SourceRevision is what the chart was resolved from: a HelmRepository's
	// index digest, an OCI manifest digest or a source's artifact revision.
	SourceRevision string
}

// SourceCharts gets HelmRelease charts from Flux sources: a HelmRepository's
// index (no source-controller needed), or a path in the artifact of a
// GitRepository, Bucket or OCIRepository.
type SourceCharts struct {
	// Reader reads Secrets uncached, so the operator does not hold every
	// Secret of the cluster in memory; it also reads sources when Sources is
	// nil or does not have them yet.
	Reader client.Reader
	// Sources, when set, reads the Flux sources from the informer cache the
	// controller's watches on them fill: two API requests less per release
	// and pass.
	Sources   client.Reader
	Fetcher   *chart.Fetcher
	Artifacts *source.Store
}

// getSource reads a Flux source from the cache, or from the API server when
// the cache does not have it (yet): a source created just before its
// release must not make the release wait.
func (s *SourceCharts) getSource(ctx context.Context, key client.ObjectKey, obj client.Object) error {
	if s.Sources != nil {
		err := s.Sources.Get(ctx, key, obj)
		if !apierrors.IsNotFound(err) {
			return err
		}
	}
	return s.Reader.Get(ctx, key, obj)
}

// ErrNoArtifact means a source has not produced an artifact yet.
var ErrNoArtifact = errors.New("has no artifact yet")

// GetChart returns the chart of hr and where it came from.
func (s *SourceCharts) GetChart(ctx context.Context, hr *kraanv1.HelmRelease) (*SourcedChart, error) {
	req, err := s.request(ctx, hr)
	if err != nil {
		return nil, err
	}
	res, err := s.Fetcher.Fetch(ctx, req)
	if err != nil {
		// Name the source object: a user fixes the HelmRepository (its URL
		// or its secretRef), not the URL the error is about.
		return nil, fmt.Errorf("%s: %w", sourceOf(hr), err)
	}
	sourceRevision := res.SourceRevision
	if req.ArtifactRevision != "" {
		sourceRevision = req.ArtifactRevision
	}
	return &SourcedChart{
		Chart:          res.Chart,
		Digest:         ChartDigestFor(hr, res.Digest, req.ArtifactRevision),
		SourceRevision: sourceRevision,
	}, nil
}

// ChartDigestFor identifies the desired chart: its content digest, and under
// reconcileStrategy Revision also the source's artifact revision, so that a
// new revision is a new chart even when the chart's files did not change, as
// Flux's HelmChart versions it.
func ChartDigestFor(hr *kraanv1.HelmRelease, digest, artifactRevision string) string {
	if hr.Spec.Chart == nil || hr.Spec.Chart.Spec.ReconcileStrategy != kraanv1.ReconcileStrategyRevision || artifactRevision == "" {
		return digest
	}
	sum := sha256.Sum256([]byte(digest + "\n" + artifactRevision))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// sourceOf names the object the release's chart comes from, e.g.
// "HelmRepository apps/charts".
func sourceOf(hr *kraanv1.HelmRelease) string {
	if ref := hr.Spec.ChartRef; ref != nil {
		return fmt.Sprintf("%s %s", ref.Kind, Namespaced(ref.Namespace, hr.Namespace, ref.Name))
	}
	if hr.Spec.Chart.IsOCI() {
		return ociChartName(hr.Spec.Chart.Spec.URL)
	}
	ref := hr.Spec.Chart.Spec.SourceRef
	return fmt.Sprintf("%s %s", ref.Kind, Namespaced(ref.Namespace, hr.Namespace, ref.Name))
}

func (s *SourceCharts) request(ctx context.Context, hr *kraanv1.HelmRelease) (chart.Request, error) {
	if ref := hr.Spec.ChartRef; ref != nil {
		// The artifact of an OCIRepository holding a chart, or of a HelmChart,
		// is the chart itself: at the artifact's root, or in its one directory
		// (a packaged chart's archive holds <name>/Chart.yaml).
		var src ArtifactSource = &sourcev1.OCIRepository{}
		switch ref.Kind {
		case sourcev1.HelmChartKind:
			src = &sourcev1.HelmChart{}
		case kraanv1.ExternalArtifactKind:
			src = &sourcev1.ExternalArtifact{}
		}
		dir, revision, err := s.artifactDir(ctx, src, Namespaced(ref.Namespace, hr.Namespace, ref.Name))
		if err != nil {
			return chart.Request{}, err
		}
		return chart.Request{Chart: chart.RootOf(dir), ArtifactDir: dir, ArtifactRevision: revision}, nil
	}
	if hr.Spec.Chart.IsOCI() {
		return s.ociChartRequest(ctx, hr)
	}
	spec := hr.Spec.Chart.Spec
	if spec.SourceRef == nil {
		return chart.Request{}, outcome.Terminal(kraanv1.ReasonArtifactFailed, errors.New("spec.chart.spec.sourceRef is not set"))
	}
	req := chart.NewRequest(spec)
	key := Namespaced(spec.SourceRef.Namespace, hr.Namespace, spec.SourceRef.Name)
	var err error
	switch spec.SourceRef.Kind {
	case sourcev1.HelmRepositoryKind:
		req.Repository, _, err = s.Repository(ctx, key)
	case sourcev1.GitRepositoryKind:
		req.ArtifactDir, req.ArtifactRevision, err = s.artifactDir(ctx, &sourcev1.GitRepository{}, key)
	case sourcev1.BucketKind:
		req.ArtifactDir, req.ArtifactRevision, err = s.artifactDir(ctx, &sourcev1.Bucket{}, key)
	case sourcev1.OCIRepositoryKind:
		req.ArtifactDir, req.ArtifactRevision, err = s.artifactDir(ctx, &sourcev1.OCIRepository{}, key)
	default:
		err = outcome.Terminal(kraanv1.ReasonArtifactFailed, fmt.Errorf("unsupported chart source kind %q", spec.SourceRef.Kind))
	}
	return req, err
}

// repository reads a HelmRepository and its credentials, and returns its
// spec.interval.
func (s *SourceCharts) Repository(ctx context.Context, key client.ObjectKey) (*chart.Repository, time.Duration, error) {
	repo := &sourcev1.HelmRepository{}
	if err := s.getSource(ctx, key, repo); err != nil {
		return nil, 0, sourceReadError("HelmRepository", key, err)
	}
	interval := repo.Spec.Interval.Duration
	r := &chart.Repository{URL: repo.Spec.URL, Type: repo.Spec.Type, Insecure: repo.Spec.Insecure,
		Suspended: repo.Spec.Suspend, PassCredentials: repo.Spec.PassCredentials}
	if repo.Spec.Timeout != nil {
		r.Timeout = repo.Spec.Timeout.Duration
	}
	if err := unsupportedProvider(repo); err != nil {
		return nil, interval, outcome.Terminal(kraanv1.ReasonArtifactFailed, err)
	}
	creds, err := s.repositoryCredentials(ctx, repo)
	if err != nil {
		return nil, interval, err
	}
	r.Credentials = creds
	return r, interval, nil
}

// unsupportedProvider refuses cloud workload identity (spec.provider aws,
// azure or gcp), which source-controller uses for an OCI repository without
// a secretRef: going anonymous instead would fail later with a 401 that
// hides the cause.
func unsupportedProvider(repo *sourcev1.HelmRepository) error {
	p := repo.Spec.Provider
	if repo.Spec.Type != sourcev1.HelmRepositoryTypeOCI || repo.Spec.SecretRef != nil || p == "" || p == sourcev1.GenericOCIProvider {
		return nil
	}
	return fmt.Errorf("HelmRepository %s: spec.provider %s (cloud workload identity) is not supported: "+
		"give the registry's credentials in a secretRef", client.ObjectKeyFromObject(repo), p)
}

// registrySecrets says where a chart source's credentials are: the Secrets
// secretRef and certSecretRef name in namespace, and who names them, for
// messages ("HelmRepository apps/charts", or a HelmRelease's spec.chart.spec
// for an OCI chart at a URL).
type registrySecrets struct {
	owner, namespace, url    string
	oci                      bool
	secretRef, certSecretRef string
}

// secretsOfRepository are a HelmRepository's registry Secrets.
func secretsOfRepository(repo *sourcev1.HelmRepository) registrySecrets {
	rs := registrySecrets{owner: "HelmRepository " + client.ObjectKeyFromObject(repo).String(), namespace: repo.Namespace,
		url: repo.Spec.URL, oci: repo.Spec.Type == sourcev1.HelmRepositoryTypeOCI}
	if repo.Spec.SecretRef != nil {
		rs.secretRef = repo.Spec.SecretRef.Name
	}
	if repo.Spec.CertSecretRef != nil {
		rs.certSecretRef = repo.Spec.CertSecretRef.Name
	}
	return rs
}

// repositoryCredentials reads a HelmRepository's Secrets.
func (s *SourceCharts) repositoryCredentials(ctx context.Context, repo *sourcev1.HelmRepository) (*chart.Credentials, error) {
	return s.credentials(ctx, secretsOfRepository(repo))
}

// credentials reads a chart source's Secrets as source-controller does:
// secretRef holds basic auth (and, deprecated but still read, TLS keys), or
// for OCI may be a kubernetes.io/dockerconfigjson Secret; certSecretRef holds
// ca.crt, tls.crt and tls.key and takes priority over TLS keys in secretRef.
// The Secrets are read in the source's own namespace only. A Secret that
// cannot work is the user's to fix: a terminal error naming the field, the
// Secret and the key, never the content.
func (s *SourceCharts) credentials(ctx context.Context, rs registrySecrets) (*chart.Credentials, error) {
	var creds *chart.Credentials
	if rs.secretRef != "" {
		secret, err := s.registrySecret(ctx, rs, "secretRef", rs.secretRef)
		if err != nil {
			return nil, err
		}
		if creds, err = loginFromSecret(rs.oci, rs.url, secret); err != nil {
			return nil, badRegistrySecret(rs, "secretRef", secret, err)
		}
	}
	if rs.certSecretRef != "" {
		secret, err := s.registrySecret(ctx, rs, "certSecretRef", rs.certSecretRef)
		if err != nil {
			return nil, err
		}
		certs, err := chart.TLSFromSecret(secret.Data)
		if err != nil {
			return nil, badRegistrySecret(rs, "certSecretRef", secret, err)
		}
		creds = creds.WithTLS(certs)
	}
	return creds, nil
}

// registrySecret reads a Secret a source's field names, in the source's
// namespace.
func (s *SourceCharts) registrySecret(ctx context.Context, rs registrySecrets, field, name string) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: rs.namespace, Name: name}
	if err := s.Reader.Get(ctx, key, secret); err != nil {
		return nil, sourceReadError(fmt.Sprintf("the %s of %s: Secret", field, rs.owner), key, err)
	}
	return secret, nil
}

// loginFromSecret reads the credentials of a secretRef: a Docker config for
// an OCI registry when the Secret is of that type, else its keys.
func loginFromSecret(oci bool, url string, secret *corev1.Secret) (*chart.Credentials, error) {
	if secret.Type != corev1.SecretTypeDockerConfigJson {
		return chart.CredentialsFromSecret(secret.Data)
	}
	if !oci {
		return nil, errors.New("a kubernetes.io/dockerconfigjson Secret logs in to OCI registries only: " +
			"set type: oci, or give the Secret username and password keys")
	}
	return chart.CredentialsFromDockerConfig(secret.Data[corev1.DockerConfigJsonKey], url)
}

// badRegistrySecret says which source field's Secret is wrong and why.
func badRegistrySecret(rs registrySecrets, field string, secret *corev1.Secret, err error) error {
	return outcome.Terminal(kraanv1.ReasonArtifactFailed, fmt.Errorf("%s: %s %s: %w",
		rs.owner, field, client.ObjectKeyFromObject(secret), err))
}

// ArtifactSource is a Flux source with an artifact.
type ArtifactSource interface {
	client.Object
	GetArtifact() *fluxmeta.Artifact
}

// artifactDir downloads (or reuses) the source's current artifact, and
// returns where it is and its revision.
func (s *SourceCharts) artifactDir(ctx context.Context, obj ArtifactSource, key client.ObjectKey) (string, string, error) {
	if err := s.getSource(ctx, key, obj); err != nil {
		return "", "", sourceReadError(reflect.TypeOf(obj).Elem().Name(), key, err)
	}
	artifact := obj.GetArtifact()
	if artifact == nil {
		// source-controller has not produced one yet; its next revision is
		// a matter of its interval.
		return "", "", outcome.Waiting(kraanv1.ReasonArtifactFailed, SourceRetry, fmt.Errorf("source %s %w", key, ErrNoArtifact))
	}
	dir, err := s.Artifacts.Fetch(ctx, source.FromFlux(artifact))
	if err != nil {
		return "", "", fmt.Errorf("fetching the artifact of %s: %w", key, err)
	}
	return dir, artifact.Revision, nil
}

func Namespaced(namespace, fallback, name string) client.ObjectKey {
	if namespace == "" {
		namespace = fallback
	}
	return client.ObjectKey{Namespace: namespace, Name: name}
}

// sourceReadError wraps a failure to read a source or its secret: one that
// does not exist (yet) is waited for, anything else is retried with back-off.
func sourceReadError(what string, key client.ObjectKey, err error) error {
	err = fmt.Errorf("reading %s %s: %w", what, key, err)
	if apierrors.IsNotFound(err) {
		return outcome.Waiting(kraanv1.ReasonArtifactFailed, SourceRetry, err)
	}
	return err
}

// ClassifyChartError decides, from the chart package's typed errors, whether
// a chart failure is the user's to fix (a chart or version the source does not
// have, credentials refused, a broken chart) or may pass by itself (an
// unreachable repository, a server error). Errors already classified keep
// their class.
func ClassifyChartError(err error) error {
	switch {
	case outcome.Classified(err):
		return err
	case meta.IsNoMatchError(err):
		return outcome.KindNotInstalled(kraanv1.ReasonSourceKindNotInstalled, err, FluxSourceProvider)
	case chart.IsTerminal(err):
		return outcome.Terminal(kraanv1.ReasonArtifactFailed, err)
	}
	return outcome.Transient(kraanv1.ReasonArtifactFailed, err)
}

// FluxSourceProvider is what installs Flux's source kinds: the operator
// watches all five, which source-controller serves as v1 since v1.6.
const FluxSourceProvider = "Flux source-controller v1.6 or later (source.toolkit.fluxcd.io/v1)"
