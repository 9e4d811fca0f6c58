package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kraan-io/kraan-operator/test/testenv"
)

// metricsServerName is the DNS name the chart's ServiceMonitor verifies:
// <release>-metrics.<namespace>.svc.
const metricsServerName = "kraan-metrics.kraan-system.svc"

// TestMetrics_ServeTheCertificateOfCertDir: with --metrics-cert-dir the
// metrics endpoint serves the mounted certificate, so a scraper verifying it
// with the CA and the Service's DNS name (the chart's ServiceMonitor, with
// insecureSkipVerify false) connects, and one expecting another name is
// refused. The endpoint is started from the flags as the operator starts it
// (metricsOptions), without a whole manager: one runs per test process,
// controller names being process-wide.
func TestMetrics_ServeTheCertificateOfCertDir(t *testing.T) {
	g := NewWithT(t)
	env, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	certDir, roots := writeServingCert(t, metricsServerName)
	metricsAddr := freeAddr(t)
	opts, err := parseOptions([]string{"--metrics-bind-address", metricsAddr, "--metrics-cert-dir", certDir}, io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	httpClient, err := rest.HTTPClientFor(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	srv, err := metricsserver.NewServer(metricsOptions(opts), env.Config, httpClient)
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	defer func() {
		cancel()
		g.Eventually(done).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
	}()

	handshake := func(serverName string) func() error {
		return func() error {
			d := &tls.Dialer{Config: &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12}}
			conn, err := d.DialContext(context.Background(), "tcp", metricsAddr)
			if err == nil {
				_ = conn.Close()
			}
			return err
		}
	}
	g.Eventually(handshake(metricsServerName)).WithTimeout(30 * time.Second).Should(Succeed())
	// Another name is refused: the scraper checks the name, not only the CA.
	g.Expect(handshake("other.svc")()).To(MatchError(ContainSubstring("certificate")))
}

// writeServingCert writes tls.crt and tls.key, signed by a new CA for
// dnsName, into a new directory, and returns it with the CA as a pool.
func writeServingCert(t *testing.T, dnsName string) (string, *x509.CertPool) {
	t.Helper()
	g := NewWithT(t)
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kraan metrics CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	g.Expect(err).NotTo(HaveOccurred())
	caCert, err := x509.ParseCertificate(caDER)
	g.Expect(err).NotTo(HaveOccurred())

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: dnsName}, DNSNames: []string{dnsName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	g.Expect(err).NotTo(HaveOccurred())
	keyDER, err := x509.MarshalECPrivateKey(key)
	g.Expect(err).NotTo(HaveOccurred())

	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, metricsCertName), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}), 0o600)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, metricsKeyName), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)).To(Succeed())
	roots := x509.NewCertPool()
	roots.AddCert(caCert)
	return dir, roots
}
