package localplane

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// Paths inside the plane's directory.
const (
	etcdDataDir    = "etcd"
	certDir        = "certs"
	saKeyFile      = "sa.key"
	saPubFile      = "sa.pub"
	tokenFile      = "tokens.csv"
	caFile         = "ca.crt" // the CA part of certs/apiserver.crt
	kubeconfigFile = "kubeconfig"
)

// etcdArgs binds client and peer URLs to loopback only. fsync is skipped: the
// data is thrown away with the plane and fsync dominates etcd latency on
// slow disks. The backend quota is raised from etcd's 2 GiB default: the
// benchmark keeps 20,000 Deployments with their pods and Helm records, and
// their status churn, on one plane.
func etcdArgs(dir string, clientPort, peerPort int) []string {
	client := loopbackURL("http", clientPort)
	peer := loopbackURL("http", peerPort)
	return []string{
		"--name=localplane",
		"--data-dir=" + filepath.Join(dir, etcdDataDir),
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=localplane=" + peer,
		"--unsafe-no-fsync=true",
		"--quota-backend-bytes=8589934592",
	}
}

// apiserverArgs are the flags known to work (see RECIPES.md). The advertise
// address and the disabled endpoint reconciler keep the apiserver from
// looking for a non-loopback interface or default route, which sandboxes may
// lack; they are harmless where one exists.
func apiserverArgs(dir string, etcdPort, securePort int) []string {
	return []string{
		"--etcd-servers=" + loopbackURL("http", etcdPort),
		"--secure-port=" + strconv.Itoa(securePort),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none",
		"--cert-dir=" + filepath.Join(dir, certDir),
		"--service-account-key-file=" + filepath.Join(dir, saPubFile),
		"--service-account-signing-key-file=" + filepath.Join(dir, saKeyFile),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--token-auth-file=" + filepath.Join(dir, tokenFile),
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.96.0.0/16",
	}
}

// controllerManagerArgs keeps every controller except nodeipam (no pod CIDRs
// here). The nodelifecycle controller must stay: it removes the not-ready
// taint once kwok reports the Node Ready. --secure-port=0 means no listener.
func controllerManagerArgs(dir string) []string {
	kubeconfig := filepath.Join(dir, kubeconfigFile)
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--service-account-private-key-file=" + filepath.Join(dir, saKeyFile),
		"--root-ca-file=" + filepath.Join(dir, caFile),
		"--secure-port=0",
		"--controllers=*,-nodeipam",
	}
}

// schedulerArgs: --secure-port=0 means no listener.
func schedulerArgs(dir string) []string {
	kubeconfig := filepath.Join(dir, kubeconfigFile)
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
	}
}

// kwokArgs manages only Nodes annotated kwok.x-k8s.io/node=fake. kwok opens
// no listener unless --server-address or --node-port is set, so none is.
//
// The heartbeat-with-lease stage patches node status only every ~10 minutes
// and relies on kwok renewing the node's Lease, which it does only with
// --node-lease-duration-seconds. Without it the node controller finds no
// heartbeat after its grace period (50s), marks the node NotReady and every
// pod on it not Ready, and Deployments stop being Available mid-test.
func kwokArgs(dir, assets string) []string {
	return []string{
		"--kubeconfig=" + filepath.Join(dir, kubeconfigFile),
		"--config=" + filepath.Join(assets, kwokStagesYML),
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + kwokAnnotation + "=fake",
		"--cidr=10.0.0.1/24",
		"--node-ip=10.0.0.1",
		"--node-lease-duration-seconds=40",
	}
}

// kwokEnv points HOME at the plane's directory: kwok otherwise also loads
// ~/.kwok/kwok.yaml, which could change its behaviour from user to user.
func kwokEnv(dir string) []string {
	return []string{"HOME=" + dir}
}

func loopbackURL(scheme string, port int) string {
	return fmt.Sprintf("%s://127.0.0.1:%d", scheme, port)
}
