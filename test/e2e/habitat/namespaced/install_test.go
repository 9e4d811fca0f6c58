package namespaced_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	ssautil "github.com/fluxcd/pkg/ssa/utils"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/test/testenv"
)

// overlayDir is the kustomization under test, relative to the repository.
var overlayDir = filepath.Join("config", "namespaced")

// watchNamespaceFlag is the operator's flag the overlay sets.
const watchNamespaceFlag = "--watch-namespace="

// install is the namespaced installation as kustomize built it.
type install struct {
	// objects are every object of the build, in kustomize's order.
	objects []*unstructured.Unstructured
	// deployment runs the operator; container holds its arguments.
	deployment *appsv1.Deployment
	container  corev1.Container
	// watched are the namespaces of the container's --watch-namespace.
	watched []string
}

// buildOverlay runs `kubectl kustomize config/namespaced`, the command the
// documentation gives users, with the kubectl of the tool cache.
func buildOverlay(ctx context.Context) (*install, error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		return nil, errors.New("KUBEBUILDER_ASSETS is not set: run the tests with `make test`, which builds kubectl into the tool cache")
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(assets, "kubectl"), "kustomize", filepath.Join(root, overlayDir))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kubectl kustomize %s: %w: %s", overlayDir, err, stderr.String())
	}
	objs, err := ssautil.ReadObjects(bytes.NewReader(out))
	if err != nil {
		return nil, err
	}
	return newInstall(objs)
}

// newInstall finds the operator's Deployment and the namespaces it watches.
func newInstall(objs []*unstructured.Unstructured) (*install, error) {
	in := &install{objects: objs}
	for _, obj := range objs {
		if obj.GetKind() != "Deployment" {
			continue
		}
		in.deployment = &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, in.deployment); err != nil {
			return nil, fmt.Errorf("reading the Deployment: %w", err)
		}
	}
	if in.deployment == nil || len(in.deployment.Spec.Template.Spec.Containers) != 1 {
		return nil, fmt.Errorf("%s: want one Deployment with one container", overlayDir)
	}
	in.container = in.deployment.Spec.Template.Spec.Containers[0]
	for _, arg := range in.container.Args {
		if list, ok := strings.CutPrefix(arg, watchNamespaceFlag); ok {
			in.watched = strings.Split(list, ",")
		}
	}
	if len(in.watched) == 0 {
		return nil, fmt.Errorf("%s: the Deployment has no %s", overlayDir, watchNamespaceFlag)
	}
	return in, nil
}

// apply installs what a user's `kubectl apply -k` would, after creating the
// watched namespaces as the documentation says to. CRDs are already
// installed; the Deployment is left out: its image cannot run here, the
// suite runs the operator binary in its place.
func (in *install) apply(ctx context.Context, c client.Client) error {
	for _, ns := range in.watched {
		err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", ns, err)
		}
	}
	for _, obj := range in.objects {
		if kind := obj.GetKind(); kind == "CustomResourceDefinition" || kind == "Deployment" {
			continue
		}
		err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("kraan-e2e"), client.ForceOwnership)
		if err != nil {
			return fmt.Errorf("applying %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return nil
}

// serviceAccount is the account the operator's pods would run as.
func (in *install) serviceAccount() (namespace, name string) {
	return in.deployment.Namespace, in.deployment.Spec.Template.Spec.ServiceAccountName
}

// ofKind returns the built objects of one kind.
func (in *install) ofKind(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, obj := range in.objects {
		if obj.GetKind() == kind {
			out = append(out, obj)
		}
	}
	return out
}
