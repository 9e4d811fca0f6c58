// Package testpki makes a throwaway certificate authority for tests: server
// certificates for 127.0.0.1 and client certificates, as PEM (what a
// Kubernetes Secret holds) and as crypto/tls configurations (what a test
// server needs). Keys are ECDSA P-256, which is fast to generate.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"
)

// CA is a certificate authority that signs the certificates of one test.
type CA struct {
	// CertPEM is the CA's certificate: a Secret's ca.crt.
	CertPEM []byte

	tb   testing.TB
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// Pair is a certificate and its private key, PEM encoded: a Secret's tls.crt
// and tls.key.
type Pair struct {
	CertPEM []byte
	KeyPEM  []byte
}

// NewCA makes a CA valid for an hour.
func NewCA(tb testing.TB, name string) *CA {
	tb.Helper()
	key := newKey(tb)
	tmpl := template(tb, name)
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatalf("testpki: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatalf("testpki: %v", err)
	}
	return &CA{tb: tb, cert: cert, key: key, CertPEM: pemCert(der)}
}

// Pool is a pool holding only the CA, for clients (RootCAs) or for servers
// checking client certificates (ClientCAs).
func (ca *CA) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return pool
}

// Server signs a server certificate for 127.0.0.1 and localhost.
func (ca *CA) Server() Pair {
	ca.tb.Helper()
	tmpl := template(ca.tb, "127.0.0.1")
	tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	tmpl.DNSNames = []string{"localhost"}
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	return ca.sign(tmpl)
}

// Client signs a client certificate with the common name given.
func (ca *CA) Client(commonName string) Pair {
	ca.tb.Helper()
	tmpl := template(ca.tb, commonName)
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return ca.sign(tmpl)
}

// ServerTLS is the configuration of a server presenting a certificate of
// this CA. With requireClientCert, it also demands a client certificate
// signed by the CA (tls.RequireAndVerifyClientCert).
func (ca *CA) ServerTLS(requireClientCert bool) *tls.Config {
	ca.tb.Helper()
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{ca.Server().TLS(ca.tb)}}
	if requireClientCert {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		cfg.ClientCAs = ca.Pool()
	}
	return cfg
}

// ClientTLS is the configuration of a client trusting this CA, presenting
// client if it is not nil.
func (ca *CA) ClientTLS(client *Pair) *tls.Config {
	ca.tb.Helper()
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: ca.Pool()}
	if client != nil {
		cfg.Certificates = []tls.Certificate{client.TLS(ca.tb)}
	}
	return cfg
}

// TLS is the pair as a crypto/tls certificate.
func (p Pair) TLS(tb testing.TB) tls.Certificate {
	tb.Helper()
	cert, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
	if err != nil {
		tb.Fatalf("testpki: %v", err)
	}
	return cert
}

func (ca *CA) sign(tmpl *x509.Certificate) Pair {
	ca.tb.Helper()
	key := newKey(ca.tb)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		ca.tb.Fatalf("testpki: %v", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		ca.tb.Fatalf("testpki: %v", err)
	}
	return Pair{CertPEM: pemCert(der), KeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})}
}

func newKey(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatalf("testpki: %v", err)
	}
	return key
}

func template(tb testing.TB, commonName string) *x509.Certificate {
	tb.Helper()
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		tb.Fatalf("testpki: %v", err)
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName},
		// A minute of slack for clocks that disagree a little.
		NotBefore: now.Add(-time.Minute),
		NotAfter:  now.Add(time.Hour),
	}
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
