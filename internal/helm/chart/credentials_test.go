package chart_test

import (
	"encoding/base64"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kraan-io/kraan-operator/internal/helm/chart"
	"github.com/kraan-io/kraan-operator/test/testpki"
)

// garbagePEM is a PEM block whose content is no certificate; errors must
// not quote it.
const garbagePEM = "-----BEGIN CERTIFICATE-----\nY2FuYXJ5LXBlbS1jb250ZW50\n-----END CERTIFICATE-----\n"

// garbageCanary is what garbagePEM's base64 says, and the base64 itself.
var garbageCanary = []string{"Y2FuYXJ5LXBlbS1jb250ZW50", "canary-pem-content"}

func TestCredentialsFromSecret(t *testing.T) {
	ca := testpki.NewCA(t, "CA")
	client := ca.Client("kraan")
	tests := []struct {
		name    string
		data    map[string][]byte
		want    *chart.Credentials
		wantErr string
	}{
		{name: "empty secret", data: map[string][]byte{"other": []byte("x")}},
		{
			name: "basic auth",
			data: map[string][]byte{"username": []byte("u"), "password": []byte("p")},
			want: &chart.Credentials{Username: "u", Password: "p"},
		},
		{
			name: "TLS keys, still read from secretRef as Flux does",
			data: map[string][]byte{"ca.crt": ca.CertPEM, "tls.crt": client.CertPEM, "tls.key": client.KeyPEM},
			want: &chart.Credentials{CA: ca.CertPEM, Cert: client.CertPEM, Key: client.KeyPEM},
		},
		{name: "username alone", data: map[string][]byte{"username": []byte("u")}, wantErr: `both "username" and "password"`},
		{name: "certificate alone", data: map[string][]byte{"tls.crt": client.CertPEM}, wantErr: `both "tls.crt" and "tls.key"`},
		{name: "malformed CA", data: map[string][]byte{"ca.crt": []byte(garbagePEM)}, wantErr: `secret key "ca.crt" holds a PEM block that is not a valid X.509 certificate`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := chart.CredentialsFromSecret(tt.data)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestTLSFromSecret(t *testing.T) {
	ca := testpki.NewCA(t, "CA")
	client := ca.Client("kraan")
	other := ca.Client("other")
	tests := []struct {
		name    string
		data    map[string][]byte
		want    *chart.Credentials
		wantErr string
	}{
		{name: "CA only", data: map[string][]byte{"ca.crt": ca.CertPEM}, want: &chart.Credentials{CA: ca.CertPEM}},
		{
			name: "client certificate",
			data: map[string][]byte{"ca.crt": ca.CertPEM, "tls.crt": client.CertPEM, "tls.key": client.KeyPEM},
			want: &chart.Credentials{CA: ca.CertPEM, Cert: client.CertPEM, Key: client.KeyPEM},
		},
		{
			name: "Flux's older key names",
			data: map[string][]byte{"caFile": ca.CertPEM, "certFile": client.CertPEM, "keyFile": client.KeyPEM},
			want: &chart.Credentials{CA: ca.CertPEM, Cert: client.CertPEM, Key: client.KeyPEM},
		},
		{name: "none of the keys", data: map[string][]byte{"username": []byte("u")}, wantErr: `secret must hold "ca.crt", or both "tls.crt" and "tls.key"`},
		{name: "CA not PEM", data: map[string][]byte{"ca.crt": []byte("canary-pem-content")}, wantErr: `secret key "ca.crt" holds no PEM certificate`},
		{name: "CA PEM not a certificate", data: map[string][]byte{"ca.crt": []byte(garbagePEM)},
			wantErr: `secret key "ca.crt" holds a PEM block that is not a valid X.509 certificate (certificate 1)`},
		{name: "second CA broken", data: map[string][]byte{"ca.crt": append(append([]byte{}, ca.CertPEM...), garbagePEM...)},
			wantErr: `(certificate 2)`},
		{name: "client certificate not PEM", data: map[string][]byte{"tls.crt": []byte(garbagePEM), "tls.key": client.KeyPEM},
			wantErr: `secret key "tls.crt" holds a PEM block that is not a valid X.509 certificate`},
		{name: "key not PEM", data: map[string][]byte{"tls.crt": client.CertPEM, "tls.key": []byte("canary-pem-content")},
			wantErr: `secret key "tls.key" holds no PEM private key`},
		{name: "key of another certificate", data: map[string][]byte{"tls.crt": client.CertPEM, "tls.key": other.KeyPEM},
			wantErr: `secret keys "tls.crt" and "tls.key" are not a certificate and its private key: tls: private key does not match public key`},
		{name: "key PEM not a key", data: map[string][]byte{"tls.crt": client.CertPEM,
			"tls.key": []byte("-----BEGIN PRIVATE KEY-----\nY2FuYXJ5LXBlbS1jb250ZW50\n-----END PRIVATE KEY-----\n")},
			wantErr: `secret keys "tls.crt" and "tls.key" are not a certificate and its private key: tls: failed to parse private key`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := chart.TLSFromSecret(tt.data)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				for _, canary := range garbageCanary {
					g.Expect(err.Error()).NotTo(ContainSubstring(canary))
				}
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestCredentials_WithTLS(t *testing.T) {
	g := NewWithT(t)
	basic := &chart.Credentials{Username: "u", Password: "p", CA: []byte("from secretRef")}
	certs := &chart.Credentials{CA: []byte("from certSecretRef")}

	g.Expect(basic.WithTLS(certs)).To(Equal(&chart.Credentials{Username: "u", Password: "p", CA: []byte("from certSecretRef")}))
	g.Expect(basic.WithTLS(nil)).To(Equal(basic))
	var none *chart.Credentials
	g.Expect(none.WithTLS(certs)).To(Equal(certs))
}

func TestCredentialsFromDockerConfig(t *testing.T) {
	auth := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	config := func(server, entry string) []byte {
		return fmt.Appendf(nil, `{"auths":{%q:%s}}`, server, entry)
	}
	const url = "oci://registry.example:5000/charts"
	tests := []struct {
		name    string
		data    []byte
		want    *chart.Credentials
		wantErr string
	}{
		{name: "auth field", data: config("registry.example:5000", fmt.Sprintf(`{"auth":%q}`, auth("u:p:with:colons"))),
			want: &chart.Credentials{Username: "u", Password: "p:with:colons"}},
		{name: "username and password fields", data: config("registry.example:5000", `{"username":"u","password":"p"}`),
			want: &chart.Credentials{Username: "u", Password: "p"}},
		{name: "key with scheme and path", data: config("https://registry.example:5000/v1/", fmt.Sprintf(`{"auth":%q}`, auth("u:p"))),
			want: &chart.Credentials{Username: "u", Password: "p"}},
		{name: "another host only", data: config("registry.example", fmt.Sprintf(`{"auth":%q}`, auth("u:p"))),
			wantErr: `".dockerconfigjson" has no auths entry for registry registry.example:5000`},
		{name: "not JSON", data: []byte("canary-pem-content"), wantErr: `".dockerconfigjson" is not a Docker config JSON document`},
		{name: "missing", wantErr: `secret has no ".dockerconfigjson" key`},
		{name: "auth not base64", data: config("registry.example:5000", `{"auth":"canary-pem-content!"}`), wantErr: `"auth" is not base64`},
		{name: "auth without colon", data: config("registry.example:5000", fmt.Sprintf(`{"auth":%q}`, auth("canary-pem-content"))),
			wantErr: `"auth" is not base64 of "username:password"`},
		{name: "identity token", data: config("registry.example:5000", `{"identitytoken":"canary-pem-content"}`),
			wantErr: "identity and registry tokens are not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := chart.CredentialsFromDockerConfig(tt.data, url)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(err.Error()).NotTo(ContainSubstring("canary"))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}
