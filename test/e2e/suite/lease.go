package suite

import (
	"context"
	"errors"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LeaseName is the operator's leader election Lease (cmd/main.go).
const LeaseName = "kraan-operator.kraan.io"

// LeaseHolder returns the identity holding the operator's Lease in
// namespace: the replica that reconciles, or one that died holding it until
// the Lease expires.
func LeaseHolder(ctx context.Context, c client.Client, namespace string) (string, error) {
	lease := &coordinationv1.Lease{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: LeaseName}, lease); err != nil {
		return "", err
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		return "", errors.New("the operator's Lease has no holder")
	}
	return *lease.Spec.HolderIdentity, nil
}
