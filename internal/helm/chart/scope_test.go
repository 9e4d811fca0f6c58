package chart

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestRepository_cacheScope(t *testing.T) {
	teamB := &Credentials{Username: "team-b", Password: "s3cret"}
	scope := func(url string, c *Credentials) string { return (&Repository{URL: url, Credentials: c}).cacheScope() }
	base := scope("https://charts.example.com/stable", teamB)
	tests := []struct {
		name  string
		other string
		same  bool
	}{
		{name: "trailing slash, case of scheme and host", other: scope("HTTPS://Charts.Example.com/stable/", teamB), same: true},
		{name: "equal credentials in another value", other: scope("https://charts.example.com/stable",
			&Credentials{Username: "team-b", Password: "s3cret"}), same: true},
		{name: "no credentials", other: scope("https://charts.example.com/stable", nil)},
		{name: "another password", other: scope("https://charts.example.com/stable", &Credentials{Username: "team-b", Password: "guess"})},
		{name: "the same password with a client certificate", other: scope("https://charts.example.com/stable",
			&Credentials{Username: "team-b", Password: "s3cret", CA: []byte("ca")})},
		{name: "another repository", other: scope("https://charts.example.com/incubator", teamB)},
		{name: "another host", other: scope("https://mirror.example.com/stable", teamB)},
		{name: "path case matters", other: scope("https://charts.example.com/Stable", teamB)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tt.other == base).To(Equal(tt.same), "%q vs %q", tt.other, base)
		})
	}
}

func TestCredentials_fingerprintHoldsNoSecretAndIsSalted(t *testing.T) {
	g := NewWithT(t)
	c := &Credentials{Username: "team-b", Password: "s3cret"}
	fp := c.fingerprint()
	g.Expect(fp).To(HaveLen(64))
	g.Expect(strings.Contains(fp, "s3cret") || strings.Contains(fp, "team-b")).To(BeFalse())
	// Another process (another key) fingerprints the same credentials
	// differently, so a fingerprint cannot be checked offline.
	saved := fingerprintKey
	t.Cleanup(func() { fingerprintKey = saved })
	fingerprintKey = newFingerprintKey()
	g.Expect(c.fingerprint()).NotTo(Equal(fp))
	g.Expect((*Credentials)(nil).fingerprint()).To(BeEmpty())
}
