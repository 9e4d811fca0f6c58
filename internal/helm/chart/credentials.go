package chart

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
)

// Keys of a HelmRepository's secretRef and certSecretRef, as Flux reads them.
const (
	SecretKeyUsername = "username"
	SecretKeyPassword = "password"
	SecretKeyCA       = "ca.crt"
	SecretKeyCert     = "tls.crt"
	SecretKeyKey      = "tls.key"
)

// Older names of the TLS keys, which Flux still reads when the keys above
// are absent.
const (
	legacySecretKeyCA   = "caFile"
	legacySecretKeyCert = "certFile"
	legacySecretKeyKey  = "keyFile"
)

// Credentials are a HelmRepository's basic auth and TLS material.
type Credentials struct {
	// Username and Password for basic auth; both or neither.
	Username string
	Password string
	// CA is a PEM bundle trusted in addition to the system's roots.
	CA []byte
	// Cert and Key are a PEM client certificate and key; both or neither.
	Cert []byte
	Key  []byte
}

// CredentialsFromSecret reads credentials from the data of a HelmRepository's
// secretRef: username and password, and, as Flux still accepts there, the
// TLS keys of a certSecretRef (see TLSFromSecret). It returns nil for a
// Secret with none of them, and an error naming the key for half a pair or
// a key that holds no valid PEM. Errors never quote a key's content.
func CredentialsFromSecret(data map[string][]byte) (*Credentials, error) {
	c, err := readTLS(data)
	if err != nil {
		return nil, err
	}
	c.Username, c.Password = string(data[SecretKeyUsername]), string(data[SecretKeyPassword])
	if (c.Username == "") != (c.Password == "") {
		return nil, fmt.Errorf("secret must hold both %q and %q, or neither", SecretKeyUsername, SecretKeyPassword)
	}
	if c.empty() {
		return nil, nil
	}
	return c, nil
}

// TLSFromSecret reads the data of a HelmRepository's certSecretRef: a CA
// bundle (ca.crt) and/or a client certificate and key (tls.crt, tls.key), or
// their older names caFile, certFile and keyFile. The PEM is checked here, so
// that a broken Secret is reported by key rather than at the first
// connection. Errors never quote a key's content.
func TLSFromSecret(data map[string][]byte) (*Credentials, error) {
	c, err := readTLS(data)
	if err != nil {
		return nil, err
	}
	if len(c.CA) == 0 && len(c.Cert) == 0 {
		return nil, fmt.Errorf("secret must hold %q, or both %q and %q", SecretKeyCA, SecretKeyCert, SecretKeyKey)
	}
	return c, nil
}

// WithTLS returns the credentials with the TLS material of certs (from a
// certSecretRef) in place of their own: as in Flux, a certSecretRef takes
// priority over TLS keys in the secretRef. Either may be nil.
func (c *Credentials) WithTLS(certs *Credentials) *Credentials {
	if certs == nil {
		return c
	}
	out := &Credentials{CA: certs.CA, Cert: certs.Cert, Key: certs.Key}
	if c != nil {
		out.Username, out.Password = c.Username, c.Password
	}
	return out
}

// readTLS reads and checks the TLS keys of a Secret; absent keys are left empty.
func readTLS(data map[string][]byte) (*Credentials, error) {
	ca, caKey := secretValue(data, SecretKeyCA, legacySecretKeyCA)
	cert, certKey := secretValue(data, SecretKeyCert, legacySecretKeyCert)
	key, keyKey := secretValue(data, SecretKeyKey, legacySecretKeyKey)
	if (len(cert) == 0) != (len(key) == 0) {
		return nil, fmt.Errorf("secret must hold both %q and %q, or neither", SecretKeyCert, SecretKeyKey)
	}
	if len(ca) > 0 {
		if err := checkCertificates(ca); err != nil {
			return nil, fmt.Errorf("secret key %q %w", caKey, err)
		}
	}
	if len(cert) > 0 {
		if err := checkKeyPair(cert, certKey, key, keyKey); err != nil {
			return nil, err
		}
	}
	return &Credentials{CA: ca, Cert: cert, Key: key}, nil
}

// secretValue returns the value of key, or of legacy when key is absent, and
// the name of the key it came from.
func secretValue(data map[string][]byte, key, legacy string) ([]byte, string) {
	if v, ok := data[key]; ok {
		return v, key
	}
	return data[legacy], legacy
}

// checkCertificates checks that a PEM bundle holds at least one certificate
// and that every certificate in it parses. The parser's own errors are left
// out: they can quote bytes of the input.
func checkCertificates(bundle []byte) error {
	n := 0
	for rest := bundle; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		n++
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return fmt.Errorf("holds a PEM block that is not a valid X.509 certificate (certificate %d)", n)
		}
	}
	if n == 0 {
		return errors.New("holds no PEM certificate (want -----BEGIN CERTIFICATE----- blocks)")
	}
	return nil
}

// checkKeyPair checks a client certificate and its key, naming the keys of
// the Secret they came from.
func checkKeyPair(cert []byte, certKey string, key []byte, keyKey string) error {
	if err := checkCertificates(cert); err != nil {
		return fmt.Errorf("secret key %q %w", certKey, err)
	}
	if block, _ := pem.Decode(key); block == nil || !strings.HasSuffix(block.Type, "PRIVATE KEY") {
		return fmt.Errorf("secret key %q holds no PEM private key (want a -----BEGIN … PRIVATE KEY----- block)", keyKey)
	}
	if _, err := tls.X509KeyPair(cert, key); err != nil {
		return fmt.Errorf("secret keys %q and %q are not a certificate and its private key: %s",
			certKey, keyKey, keyPairProblem(err))
	}
	return nil
}

// keyPairProblem keeps crypto/tls's own sentences ("tls: private key does
// not match public key"), which quote nothing, and drops parser errors,
// which can.
func keyPairProblem(err error) string {
	if msg := err.Error(); strings.HasPrefix(msg, "tls: ") && !strings.Contains(msg, "x509") && !strings.Contains(msg, "asn1") {
		return msg
	}
	return "the private key does not parse"
}

func (c *Credentials) empty() bool {
	return c == nil || (c.Username == "" && len(c.CA) == 0 && len(c.Cert) == 0)
}

// fingerprintKey salts credential fingerprints with a secret of this process,
// so that a fingerprint seen anywhere (a heap dump, a debugger) cannot be
// checked offline against guessed passwords, and two processes never share
// one.
var fingerprintKey = newFingerprintKey()

func newFingerprintKey() []byte {
	key := make([]byte, sha256.Size)
	if _, err := rand.Read(key); err != nil {
		// crypto/rand does not fail on the platforms Go supports.
		panic(fmt.Sprintf("reading random bytes for credential fingerprints: %v", err))
	}
	return key
}

// fingerprint identifies the credentials without holding them: an HMAC with
// this process's random key. Cache keys carry it so that what one tenant
// fetched with its credentials is never served to a request with other
// credentials, or none. "" means anonymous. It is never logged.
func (c *Credentials) fingerprint() string {
	if c.empty() {
		return ""
	}
	h := hmac.New(sha256.New, fingerprintKey)
	for _, part := range [][]byte{[]byte(c.Username), []byte(c.Password), c.CA, c.Cert, c.Key} {
		// Length prefixes keep ("ab","c") and ("a","bc") apart.
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// tlsFingerprint identifies only the TLS material, which selects the HTTP
// transport; basic auth is set per request.
func (c *Credentials) tlsFingerprint() string {
	if c == nil || (len(c.CA) == 0 && len(c.Cert) == 0) {
		return ""
	}
	return (&Credentials{CA: c.CA, Cert: c.Cert, Key: c.Key}).fingerprint()
}

// tlsConfig builds the client TLS configuration; nil means Go's default.
func (c *Credentials) tlsConfig() (*tls.Config, error) {
	if c.tlsFingerprint() == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(c.CA) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(c.CA) {
			return nil, fmt.Errorf("secret key %q holds no PEM certificate", SecretKeyCA)
		}
		cfg.RootCAs = pool
	}
	if len(c.Cert) > 0 {
		pair, err := tls.X509KeyPair(c.Cert, c.Key)
		if err != nil {
			return nil, fmt.Errorf("secret keys %q and %q: %s", SecretKeyCert, SecretKeyKey, keyPairProblem(err))
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
