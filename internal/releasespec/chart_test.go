package releasespec

import (
	"testing"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kraan-io/kraan-operator/internal/helm/chart"
)

func helmRepository(repoType, provider string, secretRef bool) *sourcev1.HelmRepository {
	repo := &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "charts", Namespace: "apps"},
		Spec:       sourcev1.HelmRepositorySpec{URL: "oci://registry.example:5000/charts", Type: repoType, Provider: provider},
	}
	if secretRef {
		repo.Spec.SecretRef = &fluxmeta.LocalObjectReference{Name: "login"}
	}
	return repo
}

func TestUnsupportedProvider(t *testing.T) {
	cases := []struct {
		name    string
		repo    *sourcev1.HelmRepository
		wantErr string
	}{
		{"no provider", helmRepository("oci", "", false), ""},
		{"generic", helmRepository("oci", "generic", false), ""},
		{"cloud provider with a secretRef: the secretRef wins, as in Flux", helmRepository("oci", "aws", true), ""},
		{"cloud provider on a default repository: Flux ignores it", helmRepository("default", "gcp", false), ""},
		{"cloud provider alone", helmRepository("oci", "azure", false),
			"HelmRepository apps/charts: spec.provider azure (cloud workload identity) is not supported: give the registry's credentials in a secretRef"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := unsupportedProvider(tc.repo)
			if tc.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(tc.wantErr))
		})
	}
}

func TestLoginFromSecret(t *testing.T) {
	dockerConfig := &corev1.Secret{
		Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"registry.example:5000":{"username":"u","password":"p"}}}`)},
	}
	cases := []struct {
		name    string
		repo    *sourcev1.HelmRepository
		secret  *corev1.Secret
		want    *chart.Credentials
		wantErr string
	}{
		{"dockerconfigjson on an OCI repository", helmRepository("oci", "", true), dockerConfig,
			&chart.Credentials{Username: "u", Password: "p"}, ""},
		{"dockerconfigjson on a default repository", helmRepository("default", "", true), dockerConfig,
			nil, "a kubernetes.io/dockerconfigjson Secret logs in to OCI registries only"},
		{"username and password", helmRepository("oci", "", true),
			&corev1.Secret{Data: map[string][]byte{"username": []byte("u"), "password": []byte("p")}},
			&chart.Credentials{Username: "u", Password: "p"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := loginFromSecret(tc.repo.Spec.Type == sourcev1.HelmRepositoryTypeOCI, tc.repo.Spec.URL, tc.secret)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}
