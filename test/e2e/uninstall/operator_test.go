package uninstall_test

import (
	"cmp"
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/kraan-io/kraan-operator/test/e2e/suite"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

// operatorNamespace is config/default's namespace.
const operatorNamespace = "kraan-system"

// podFinalizer holds the operator's pod until its process has stopped, as
// a kubelet reports a pod gone only once its container has exited: the
// plugin's wait for the pods to be gone then means the operator is stopped.
const podFinalizer = "e2e.kraan.io/operator-process"

// Deadlines: the operator's start and every wait for a state.
const (
	timeout = 3 * time.Minute
	poll    = 250 * time.Millisecond
)

// deployOperator creates config/default's objects, built in process with
// the kustomize API as `make deploy` builds them with kubectl's; the CRDs
// are the suite's already. The image does not matter: kwok runs the pods.
func deployOperator(t *testing.T) {
	t.Helper()
	g := NewWithT(t)
	root, err := testenv.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(root, "config", "default"))
	g.Expect(err).NotTo(HaveOccurred())
	// The Namespace first: kustomize keeps the kustomization's order.
	ordered := resources.Resources()
	slices.SortStableFunc(ordered, func(a, b *resource.Resource) int {
		return cmp.Compare(namespaceLast(a), namespaceLast(b))
	})
	for _, r := range ordered {
		if r.GetKind() == "CustomResourceDefinition" {
			continue
		}
		m, err := r.Map()
		g.Expect(err).NotTo(HaveOccurred())
		obj := &unstructured.Unstructured{Object: m}
		if err := k8s.Create(context.Background(), obj); !apierrors.IsAlreadyExists(err) {
			g.Expect(err).NotTo(HaveOccurred(), "creating %s %s", obj.GetKind(), obj.GetName())
		}
	}
}

// namespaceLast sorts Namespaces first.
func namespaceLast(r *resource.Resource) int {
	if r.GetKind() == "Namespace" {
		return 0
	}
	return 1
}

// startOperatorPod runs the operator binary as the pod of config/default's
// Deployment: the pod gets podFinalizer; once it is deleted (the Deployment
// scaled to 0 or deleted) the process is stopped and the finalizer removed.
// It returns once the pod is bound.
func startOperatorPod(t *testing.T, name string) *suite.RunningOperator {
	t.Helper()
	op, err := suite.StartOperator(t.Context(), suite.OperatorProcess{
		Name: name, Binary: operatorBinary, Kubeconfig: kubeconfig, Dir: filepath.Join(workDir, name),
		Args: []string{"--leader-elect", "--leader-election-namespace=" + operatorNamespace, "--log-level=debug"},
	})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		bindToPod(ctx, t, op)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		if err := op.Stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Log(op.LogTail(60))
		}
	})
	NewWithT(t).Eventually(func(g Gomega) {
		pods := operatorPods(g)
		g.Expect(pods).To(HaveLen(1))
		g.Expect(pods[0].Finalizers).To(ContainElement(podFinalizer))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "the operator's pod is bound to %s", name)
	return op
}

// bindToPod is the kubelet of the operator's pod, until ctx ends.
func bindToPod(ctx context.Context, t *testing.T, op *suite.RunningOperator) {
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		for _, pod := range listOperatorPods(ctx) {
			if err := bindPod(ctx, op, &pod); err != nil && ctx.Err() == nil {
				t.Logf("binding pod %s: %v", pod.Name, err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// bindPod puts podFinalizer on a live pod, and on a deleted one stops the
// operator before taking the finalizer off.
func bindPod(ctx context.Context, op *suite.RunningOperator, pod *corev1.Pod) error {
	has := slices.Contains(pod.Finalizers, podFinalizer)
	base := pod.DeepCopy()
	switch {
	case pod.DeletionTimestamp != nil && has:
		if err := op.Stop(); err != nil {
			return err
		}
		pod.Finalizers = slices.DeleteFunc(pod.Finalizers, func(f string) bool { return f == podFinalizer })
	case pod.DeletionTimestamp == nil && !has:
		pod.Finalizers = append(pod.Finalizers, podFinalizer)
	default:
		return nil
	}
	return client.IgnoreNotFound(k8s.Patch(ctx, pod, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})))
}

func listOperatorPods(ctx context.Context) []corev1.Pod {
	pods := &corev1.PodList{}
	if err := k8s.List(ctx, pods, client.InNamespace(operatorNamespace), client.MatchingLabels{"control-plane": "controller-manager"}); err != nil {
		return nil
	}
	return pods.Items
}

func operatorPods(g Gomega) []corev1.Pod {
	pods := &corev1.PodList{}
	g.Expect(k8s.List(context.Background(), pods, client.InNamespace(operatorNamespace),
		client.MatchingLabels{"control-plane": "controller-manager"})).To(Succeed())
	return pods.Items
}
