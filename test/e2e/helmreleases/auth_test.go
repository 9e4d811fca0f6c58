package helmreleases_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"testing"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/test/chartrepo"
	"github.com/kraan-io/kraan-operator/test/testpki"
)

// repositoryAuth is how a test points a HelmRepository at an authenticated
// server: the repository's spec and the Secrets it names.
type repositoryAuth struct {
	url             string
	oci             bool
	passCredentials bool
	// secretRef and certSecretRef are the Secrets' types and data; nil: unset.
	secretRef     *corev1.Secret
	certSecretRef *corev1.Secret
}

// createAuthenticatedRepository creates the Secrets and a HelmRepository
// named "charts" using them.
func createAuthenticatedRepository(t *testing.T, ns string, a repositoryAuth) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	repo := newHelmRepository(ns, "charts", a.url)
	repo.Spec.PassCredentials = a.passCredentials
	if a.oci {
		repo.Spec.Type = sourcev1.HelmRepositoryTypeOCI
	}
	if s := a.secretRef; s != nil {
		s.Name, s.Namespace = "repo-auth", ns
		g.Expect(k8s.Create(ctx, s)).To(Succeed())
		repo.Spec.SecretRef = &fluxmeta.LocalObjectReference{Name: s.Name}
	}
	if s := a.certSecretRef; s != nil {
		s.Name, s.Namespace = "repo-tls", ns
		g.Expect(k8s.Create(ctx, s)).To(Succeed())
		repo.Spec.CertSecretRef = &fluxmeta.LocalObjectReference{Name: s.Name}
	}
	g.Expect(k8s.Create(ctx, repo)).To(Succeed())
}

func secretData(data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{Data: data}
}

// dockerConfigSecret is a kubernetes.io/dockerconfigjson Secret as
// `kubectl create secret docker-registry` writes it.
func dockerConfigSecret(host, user, password string) *corev1.Secret {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	return &corev1.Secret{
		Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: fmt.Appendf(nil,
			`{"auths":{%q:{"username":%q,"password":%q,"auth":%q}}}`, host, user, password, auth)},
	}
}

// TestHelmRelease_FromAuthenticatedRepositories installs a release from each
// kind of private repository Flux users run, each a real server started here
// with a CA of its own, through a HelmRepository and its Secrets.
func TestHelmRelease_FromAuthenticatedRepositories(t *testing.T) {
	ca := testpki.NewCA(t, "repositories CA")
	client := ca.Client("kraan")
	caOnly := func() *corev1.Secret { return secretData(map[string][]byte{"ca.crt": ca.CertPEM}) }
	basic := map[string][]byte{"username": []byte("reader"), "password": []byte("s3cret")}
	cases := []struct {
		name  string
		serve func(t *testing.T) repositoryAuth
	}{
		{"HTTPS with basic auth", func(t *testing.T) repositoryAuth {
			repo := chartrepo.NewHTTPSRepo(t, ca.ServerTLS(false), chartrepo.ChartDir("small"))
			repo.RequireBasicAuth("reader", "s3cret")
			return repositoryAuth{url: repo.URL, secretRef: secretData(basic), certSecretRef: caOnly()}
		}},
		{"HTTPS with a client certificate", func(t *testing.T) repositoryAuth {
			repo := chartrepo.NewHTTPSRepo(t, ca.ServerTLS(true), chartrepo.ChartDir("small"))
			return repositoryAuth{url: repo.URL, certSecretRef: secretData(map[string][]byte{
				"ca.crt": ca.CertPEM, "tls.crt": client.CertPEM, "tls.key": client.KeyPEM})}
		}},
		{"HTTP with archives on another host and passCredentials", func(t *testing.T) repositoryAuth {
			archives := chartrepo.NewHTTPRepo(t, chartrepo.ChartDir("small"))
			archives.RequireBasicAuth("reader", "s3cret")
			index := chartrepo.NewHTTPRepo(t)
			index.ServeIndexOf(archives)
			index.RequireBasicAuth("reader", "s3cret")
			return repositoryAuth{url: index.URL, passCredentials: true, secretRef: secretData(basic)}
		}},
		{"OCI over TLS with token auth and a dockerconfigjson Secret", func(t *testing.T) repositoryAuth {
			registry := chartrepo.NewOCIRegistry(t, chartrepo.WithTLS(ca.ServerTLS(false), ca.ClientTLS(nil)))
			registry.RequireTokenAuth("reader", "s3cret")
			registry.Push(chartrepo.ChartDir("small"))
			return repositoryAuth{url: registry.URL(), oci: true,
				secretRef: dockerConfigSecret(registry.Host, "reader", "s3cret"), certSecretRef: caOnly()}
		}},
		{"OCI over TLS with basic auth and the CA in secretRef", func(t *testing.T) repositoryAuth {
			registry := chartrepo.NewOCIRegistry(t, chartrepo.WithTLS(ca.ServerTLS(false), ca.ClientTLS(nil)))
			registry.RequireBasicAuth("reader", "s3cret")
			registry.Push(chartrepo.ChartDir("small"))
			return repositoryAuth{url: registry.URL(), oci: true, secretRef: secretData(map[string][]byte{
				"username": []byte("reader"), "password": []byte("s3cret"), "ca.crt": ca.CertPEM})}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t)
			createAuthenticatedRepository(t, ns, tc.serve(t))
			newRelease(t, ns, "private", "small", withVersion("0.1.0"))
			hr := readyAt(t, ns, "private")
			g := NewWithT(t)
			g.Expect(hr.Status.LastAttemptedRevision).To(Equal("0.1.0"))
			g.Expect(helmRevisions(g, ns, "private")).To(ConsistOf("1=deployed"))
		})
	}
}

// TestHelmRelease_RegistryCredentialsNeverLeak: an OCI registry behind a
// token server refuses a dockerconfigjson Secret's wrong password; the
// condition names the HelmRepository and the step, and no condition, event,
// log line or metric holds the username, the password or their base64.
func TestHelmRelease_RegistryCredentialsNeverLeak(t *testing.T) {
	ns := newNamespace(t)
	ca := testpki.NewCA(t, "registry CA")
	registry := chartrepo.NewOCIRegistry(t, chartrepo.WithTLS(ca.ServerTLS(false), ca.ClientTLS(nil)))
	registry.RequireTokenAuth("reader", "the-right-password")
	registry.Push(chartrepo.ChartDir("small"))
	user := fmt.Sprintf("canary-user-%016x", rand.Uint64())
	password := fmt.Sprintf("canary-password-%016x", rand.Uint64())
	createAuthenticatedRepository(t, ns, repositoryAuth{url: registry.URL(), oci: true,
		secretRef:     dockerConfigSecret(registry.Host, user, password),
		certSecretRef: secretData(map[string][]byte{"ca.crt": ca.CertPEM})})
	newRelease(t, ns, "private", "small", withVersion("0.1.0"))

	NewWithT(t).Eventually(func(g Gomega) {
		ready := condition(get(g, ns, "private"), kraanv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Message).To(And(
			ContainSubstring("HelmRepository "+ns+"/charts: "),
			ContainSubstring("listing tags: 401 Unauthorized"),
			ContainSubstring("refused the credentials")), ready.Message)
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	expectNoCanaryAnywhere(t, ns, "private", []string{user, password, basic, "canary-"})
}
