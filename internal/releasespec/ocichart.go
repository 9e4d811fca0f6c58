package releasespec

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/helm/chart"
	"github.com/kraan-io/kraan-operator/internal/outcome"
)

// defaultOCITag is what Flux's OCIRepository pulls when its ref names nothing.
const defaultOCITag = "latest"

// ociChartRequest is the request for a chart at spec.chart.spec.url
// (spec.chart.kind OCIRepository, Flux v1.7): the operator pulls it from the
// registry itself, with the same caps, credential-scoped caches and tenant
// rules as a chart of an OCI HelmRepository — credentials come only from
// Secrets of the HelmRelease's own namespace. No Flux object is read.
func (s *SourceCharts) ociChartRequest(ctx context.Context, hr *kraanv1.HelmRelease) (chart.Request, error) {
	spec := hr.Spec.Chart.Spec
	owner := fmt.Sprintf("HelmRelease %s spec.chart.spec", client.ObjectKeyFromObject(hr))
	repoURL, name, err := splitOCIChartURL(spec.URL)
	if err != nil {
		return chart.Request{}, outcome.Terminal(kraanv1.ReasonArtifactFailed, fmt.Errorf("%s.url: %w", owner, err))
	}
	if err := checkOCIChartSpec(owner, spec); err != nil {
		return chart.Request{}, outcome.Terminal(kraanv1.ReasonArtifactFailed, err)
	}
	r := &chart.Repository{URL: repoURL, Type: chart.RepositoryTypeOCI, Insecure: spec.Insecure, Suspended: spec.Suspend}
	if spec.Timeout != nil {
		r.Timeout = spec.Timeout.Duration
	}
	rs := registrySecrets{owner: owner, namespace: hr.Namespace, url: repoURL, oci: true}
	if spec.SecretRef != nil {
		rs.secretRef = spec.SecretRef.Name
	}
	if spec.CertSecretRef != nil {
		rs.certSecretRef = spec.CertSecretRef.Name
	}
	if r.Credentials, err = s.credentials(ctx, rs); err != nil {
		return chart.Request{}, err
	}
	req := chart.Request{Chart: name, Repository: r}
	selectVersion(&req, spec.Ref)
	return req, nil
}

// checkOCIChartSpec refuses what admission refuses too, should an object
// predate the rules: a layer that is not a chart, workload identity.
func checkOCIChartSpec(owner string, spec kraanv1.HelmChartTemplateSpec) error {
	if ls := spec.LayerSelector; ls != nil && ls.MediaType != "" && !chart.IsChartLayerMediaType(ls.MediaType) {
		return fmt.Errorf("%s.layerSelector.mediaType %q is not a Helm chart's layer: leave it out, or name %s", owner, ls.MediaType,
			"application/vnd.cncf.helm.chart.content.v1.tar+gzip")
	}
	if spec.Provider != "" && spec.Provider != sourcev1.GenericOCIProvider {
		return fmt.Errorf("%s.provider %s (cloud workload identity) is not supported: give the registry's credentials in secretRef",
			owner, spec.Provider)
	}
	return nil
}

// selectVersion sets what ref asks for: a digest, then a semver range over
// the registry's tags, then a tag; the tag latest when ref names none.
func selectVersion(req *chart.Request, ref *kraanv1.OCIRepositoryRef) {
	switch {
	case ref != nil && ref.Digest != "":
		req.OCIRef = &chart.OCIRef{Digest: ref.Digest}
	case ref != nil && ref.SemVer != "":
		req.Version = ref.SemVer
	case ref != nil && ref.Tag != "":
		req.OCIRef = &chart.OCIRef{Tag: ref.Tag}
	default:
		req.OCIRef = &chart.OCIRef{Tag: defaultOCITag}
	}
}

// ociChartName is how messages name a chart at spec.chart.spec.url: the URL
// without any credentials in it (admission does not refuse them; the fetch
// does, see splitOCIChartURL).
func ociChartName(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		u.User = nil
		return "chart " + u.String()
	}
	return "the chart at spec.chart.spec.url"
}

// splitOCIChartURL splits oci://<registry>/<path>/<chart> into the
// repository URL (oci://<registry>/<path>) and the chart's name. The version
// is spec.chart.spec.ref, never part of the URL.
func splitOCIChartURL(raw string) (repoURL, name string, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", errors.New("not a URL: oci://<registry>/<path>/<chart>") // the parser's error quotes the URL
	}
	if u.User != nil {
		// Never echoed: what is before the @ may be a password.
		return "", "", errors.New("the URL holds credentials: give them in spec.chart.spec.secretRef")
	}
	if u.Scheme != "oci" || u.Host == "" {
		return "", "", fmt.Errorf("%q is not oci://<registry>/<path>/<chart>", raw)
	}
	p := strings.Trim(u.Path, "/")
	if p == "" {
		return "", "", fmt.Errorf("%q names a registry, not a chart: oci://<registry>/<path>/<chart>", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(p, ":@") {
		return "", "", errors.New("the URL names the chart only; its tag, digest or version goes in spec.chart.spec.ref")
	}
	dir, name := path.Split(p)
	return "oci://" + strings.TrimSuffix(u.Host+"/"+dir, "/"), name, nil
}
