package apply

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/internal/redact"
)

// secretGuard is the Applier's client: an error the API server returns for
// writing a Secret (an apply, a dry run, a create or an update) is rebuilt by
// redact.SecretError, so that it names the Secret and the failing field but
// never carries the server's text, which quotes the value it refused in
// whatever shape it was written. It sits below the ssa manager, so every
// message built on top of the error (ssa's "dry-run failed", the layer's
// condition, event and log line) starts from the safe text.
type secretGuard struct {
	client.Client
}

// Patch implements client.Writer.
func (c secretGuard) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return secretError(obj, c.Client.Patch(ctx, obj, patch, opts...))
}

// Create implements client.Writer.
func (c secretGuard) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return secretError(obj, c.Client.Create(ctx, obj, opts...))
}

// Update implements client.Writer.
func (c secretGuard) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return secretError(obj, c.Client.Update(ctx, obj, opts...))
}

// secretError rebuilds err when obj is a Secret (see redact.SecretError).
func secretError(obj client.Object, err error) error {
	if err == nil || obj.GetObjectKind().GroupVersionKind().Kind != "Secret" {
		return err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		content, convErr := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if convErr != nil {
			content = map[string]any{}
		}
		u = &unstructured.Unstructured{Object: content}
		u.SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
		u.SetNamespace(obj.GetNamespace())
		u.SetName(obj.GetName())
	}
	return redact.SecretError(u, err)
}
