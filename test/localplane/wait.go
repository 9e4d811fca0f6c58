package localplane

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// NodeName is the name of the fake Node that Start creates and kwok runs.
const NodeName = "kwok-node-0"

// kwokAnnotation marks the Nodes kwok manages (its
// --manage-nodes-with-annotation-selector).
const kwokAnnotation = "kwok.x-k8s.io/node"

// pollInterval is how often start-up conditions are checked: short, since
// each check is a cheap local request and start-up time matters in tests.
const pollInterval = 50 * time.Millisecond

// waitFor polls cond until it returns nil, a component exits, or timeout
// passes. cond returns an error saying why it is not satisfied yet. On
// timeout the error includes the log tail of component, the one that
// should have made cond true.
func (p *Plane) waitFor(ctx context.Context, what, component string, timeout time.Duration, cond func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		if err := p.exitedChild(); err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		last := cond(ctx)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %w)\n%s", what, ctx.Err(), last,
				logTail(filepath.Join(p.dir, component+".log"), 30))
		case <-tick.C:
		}
	}
}

// exitedChild returns an error for the first component that has exited:
// during start-up any exit is a failure, and waiting longer cannot help.
func (p *Plane) exitedChild() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.children {
		if c.hasExited() {
			return c.exitError()
		}
	}
	return nil
}

// waitForAPIServer waits until /readyz answers 200 over TLS verified with the
// certificate the apiserver generated, then keeps that configuration.
func (p *Plane) waitForAPIServer(ctx context.Context, host, token string) error {
	certPath := filepath.Join(p.dir, certDir, "apiserver.crt")
	return p.waitFor(ctx, "kube-apiserver /readyz", apiserverBin, apiserverTimeout, func(ctx context.Context) error {
		// Re-read each time: the file may be missing or half written at first.
		ca, err := readCA(certPath)
		if err != nil {
			return err
		}
		cfg := &rest.Config{Host: host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
		if err := probeReadyz(ctx, cfg); err != nil {
			return err
		}
		p.cfg = cfg
		return nil
	})
}

// readCA returns the CA certificates (PEM) of the chain the apiserver wrote
// to its --cert-dir when given no serving certificate: its leaf certificate
// followed by the self-signed CA that issued it. Only the CA belongs in
// trust stores; the controller-manager rejects a leaf in --root-ca-file when
// it publishes the ClusterTrustBundle ("does not have the CA bit set").
func readCA(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ca []byte
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		cert, err := x509.ParseCertificate(block.Bytes)
		if err == nil && block.Type == "CERTIFICATE" && cert.IsCA {
			ca = append(ca, pem.EncodeToMemory(block)...)
		}
	}
	if len(ca) == 0 {
		return nil, fmt.Errorf("no CA certificate in %s yet", path)
	}
	return ca, nil
}

func probeReadyz(ctx context.Context, cfg *rest.Config) error {
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/readyz", nil)
	if err != nil {
		return fmt.Errorf("build /readyz request: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz: %s: %s", resp.Status, body)
	}
	return nil
}

// waitForWorkloads creates the fake Node and waits until Pods can run:
// the Node is Ready without the not-ready taint (kwok and the node lifecycle
// controller), and the default ServiceAccount exists (the service account
// controller; the ServiceAccount admission plugin rejects Pods without it).
func (p *Plane) waitForWorkloads(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(p.cfg)
	if err != nil {
		return fmt.Errorf("clientset: %w", err)
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, fakeNode(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create node %s: %w", NodeName, err)
	}
	if err := p.waitFor(ctx, "node "+NodeName+" Ready and untainted", kwokBin, workloadTimeout, func(ctx context.Context) error {
		return nodeSchedulable(ctx, cs)
	}); err != nil {
		return err
	}
	return p.waitFor(ctx, "ServiceAccount default/default", ctrlMgrBin, workloadTimeout, func(ctx context.Context) error {
		_, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

// fakeNode is the Node kwok manages. Node status may be set on create; kwok
// keeps the capacity given here. The well-known labels let manifests with
// the usual os/arch node affinity schedule onto it. Its pods run nothing, so
// it takes far more than a real node's 110 pods: the benchmark installs
// up to 10,000 releases twice (raw, then the operator) and keeps both.
func fakeNode() *corev1.Node {
	resources := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("1000"),
		corev1.ResourceMemory: resource.MustParse("4Ti"),
		corev1.ResourcePods:   resource.MustParse("25000"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        NodeName,
			Annotations: map[string]string{kwokAnnotation: "fake"},
			Labels: map[string]string{
				"type":                   "kwok",
				"kubernetes.io/hostname": NodeName,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
			},
		},
		Status: corev1.NodeStatus{Capacity: resources, Allocatable: resources},
	}
}

func nodeSchedulable(ctx context.Context, cs kubernetes.Interface) error {
	node, err := cs.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	ready := false
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	if !ready {
		return fmt.Errorf("node %s not Ready", NodeName)
	}
	for _, t := range node.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return fmt.Errorf("node %s still tainted %s", NodeName, t.Key)
		}
	}
	return nil
}
