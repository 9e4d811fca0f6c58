package localplane

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Names of the files a Plane needs in its assets directory.
const (
	etcdBin       = "etcd"
	apiserverBin  = "kube-apiserver"
	ctrlMgrBin    = "kube-controller-manager"
	schedulerBin  = "kube-scheduler"
	kwokBin       = "kwok"
	kwokStagesYML = "kwok-stages.yaml"
)

var requiredAssets = []string{etcdBin, apiserverBin, ctrlMgrBin, schedulerBin, kwokBin, kwokStagesYML}

// resolveAssets returns the absolute assets directory, or an error that says
// exactly what is missing and how to get it: a test must fail loudly, not
// skip, when the control plane cannot run.
func resolveAssets(dir string) (string, error) {
	if dir == "" {
		dir = os.Getenv("KUBEBUILDER_ASSETS")
	}
	if dir == "" {
		return "", errors.New("localplane: no assets directory: set KUBEBUILDER_ASSETS (or Options.AssetsDir) " +
			"to the directory holding etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok and " +
			"kwok-stages.yaml; run `make tools` to build them")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("localplane: assets directory %q: %w", dir, err)
	}
	var missing []string
	for _, name := range requiredAssets {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("localplane: assets directory %s lacks %s; run `make tools`",
			dir, strings.Join(missing, ", "))
	}
	return dir, nil
}

// freePorts asks the kernel for n distinct unused loopback ports; all are
// held until the last is chosen so none is handed out twice. The ports are
// released before the components bind them, so another process could take
// one in between; the window is a few milliseconds, and a clash shows up as
// a start-up error naming the component.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free loopback port: %w", err)
		}
		defer func() { _ = l.Close() }()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// writeCredentials writes the service-account key pair and the token file
// into dir and returns the admin token.
func writeCredentials(dir string) (string, error) {
	if err := writeServiceAccountKeys(filepath.Join(dir, saKeyFile), filepath.Join(dir, saPubFile)); err != nil {
		return "", err
	}
	return writeTokenFile(filepath.Join(dir, tokenFile))
}

// writeServiceAccountKeys writes the RSA key pair the apiserver uses to sign
// and verify service-account tokens and the controller-manager uses to mint them.
func writeServiceAccountKeys(keyPath, pubPath string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("generate service-account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return fmt.Errorf("marshal service-account public key: %w", err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	if err := os.WriteFile(keyPath, keyPEM, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", keyPath, err)
	}
	if err := os.WriteFile(pubPath, pubPEM, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", pubPath, err)
	}
	return nil
}

// writeTokenFile creates a random admin token, in the group system:masters,
// and writes it in the format of kube-apiserver's --token-auth-file.
func writeTokenFile(path string) (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate admin token: %w", err)
	}
	token := hex.EncodeToString(b)
	line := token + ",admin,admin,system:masters\n"
	if err := os.WriteFile(path, []byte(line), 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return token, nil
}

// writeKubeconfig writes a kubeconfig for cfg (host, bearer token, CA data),
// usable by the components, kubectl and people.
func writeKubeconfig(path string, cfg *rest.Config) error {
	const name = "localplane"
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "default"}
	kc.CurrentContext = name
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}
