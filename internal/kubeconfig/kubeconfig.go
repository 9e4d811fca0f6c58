// Package kubeconfig reads the kubeconfigs the platform gives the operator to
// reach other clusters (a HelmRelease's spec.kubeConfig, a FleetCluster, a
// Cluster API Cluster's <name>-kubeconfig Secret), refusing whatever would
// make the operator act outside the file: its own files, programs, or an
// unverified server.
package kubeconfig

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// MaxBytes bounds a kubeconfig: a Secret holds up to 1 MiB, and a
// kubeconfig with inline certificates is a few KiB. Parsing a bigger one
// is memory a Secret's writer makes the operator spend for nothing.
const MaxBytes = 256 << 10

// Parse reads a kubeconfig and returns the REST config of its current
// context and the digest of its content, which identifies the clients made
// from it. Only kubeconfigs that carry everything inline are accepted: a
// file reference (tokenFile, client-certificate, certificate-authority, …)
// would make the operator read its own files — its service account token,
// say — on a writer's behalf, and an exec or auth-provider plugin would run a
// program in its container. insecure-skip-tls-verify is refused as well, as
// Flux does by default. Errors name what to change; they never quote the file.
func Parse(data []byte) (*rest.Config, string, error) {
	if len(data) > MaxBytes {
		return nil, "", fmt.Errorf("the kubeconfig is %d bytes, more than the %d a kubeconfig needs", len(data), MaxBytes)
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, "", errors.New("the kubeconfig is not valid YAML or not a kubeconfig")
	}
	name := cfg.CurrentContext
	kctx := cfg.Contexts[name]
	if kctx == nil {
		return nil, "", fmt.Errorf("the kubeconfig's current-context %q is not one of its contexts", name)
	}
	if err := checkInline(cfg, kctx); err != nil {
		return nil, "", err
	}
	config, err := clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("the kubeconfig's context %q is incomplete: %w", name, err)
	}
	sum := sha256.Sum256(data)
	return config, hex.EncodeToString(sum[:]), nil
}

// checkInline refuses what would reach outside the kubeconfig itself.
func checkInline(cfg *clientcmdapi.Config, kctx *clientcmdapi.Context) error {
	cluster := cfg.Clusters[kctx.Cluster]
	if cluster == nil {
		return fmt.Errorf("the kubeconfig's context names cluster %q, which it does not define", kctx.Cluster)
	}
	switch {
	case cluster.CertificateAuthority != "":
		return errors.New("the kubeconfig's cluster refers to a certificate-authority file: use certificate-authority-data")
	case cluster.InsecureSkipTLSVerify:
		return errors.New("the kubeconfig's cluster sets insecure-skip-tls-verify: give certificate-authority-data instead")
	}
	user := cfg.AuthInfos[kctx.AuthInfo]
	if user == nil {
		return nil // anonymous
	}
	switch {
	case user.Exec != nil:
		return errors.New("the kubeconfig's user runs an exec credential plugin, which the operator does not run: use a token or a client certificate")
	case user.AuthProvider != nil:
		return errors.New("the kubeconfig's user uses an auth-provider plugin, which the operator does not run: use a token or a client certificate")
	case user.TokenFile != "", user.ClientCertificate != "", user.ClientKey != "":
		return errors.New("the kubeconfig's user refers to a file (tokenFile, client-certificate or client-key): put the token or the certificate data inline")
	}
	return nil
}

// Credentials are the secret parts of config, for a redactor: a bearer
// token, a password, a client key.
func Credentials(config *rest.Config) []string {
	var out []string
	for _, v := range []string{config.BearerToken, config.Password, string(config.KeyData)} {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}
