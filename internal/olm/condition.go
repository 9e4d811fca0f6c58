package olm

import (
	"context"
	"errors"
	"fmt"
	"os"

	apiv2 "github.com/operator-framework/api/pkg/operators/v2"
	"github.com/operator-framework/operator-lib/conditions"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ConditionNameEnv is set by OLM on the operator's Deployment to the name of
// its OperatorCondition; its presence means the operator runs under OLM.
const ConditionNameEnv = "OPERATOR_CONDITION_NAME"

// RunningUnderOLM reports whether OLM started the operator.
func RunningUnderOLM() bool { return os.Getenv(ConditionNameEnv) != "" }

// ConditionKey returns the name and namespace of the operator's
// OperatorCondition. operator-lib reads the namespace from the pod's service
// account; outside a pod (the operator run as a process against a cluster)
// fallbackNamespace is used instead.
func ConditionKey(fallbackNamespace string) (types.NamespacedName, error) {
	key, err := conditions.InClusterFactory{}.GetNamespacedName()
	if err == nil {
		return *key, nil
	}
	name := os.Getenv(ConditionNameEnv)
	if name == "" || fallbackNamespace == "" {
		return types.NamespacedName{}, fmt.Errorf("locating the OperatorCondition: %w", err)
	}
	return types.NamespacedName{Namespace: fallbackNamespace, Name: name}, nil
}

// operatorCondition is one condition type in the spec of an OperatorCondition
// object, read from the API server (the operator may get and update only its
// own OperatorCondition, so it is never cached) and written with conflict retries.
type operatorCondition struct {
	reader   client.Reader
	writer   client.Client
	key      types.NamespacedName
	condType apiv2.ConditionType
}

var _ conditions.Condition = &operatorCondition{}

// NewCondition returns the condType condition of the OperatorCondition key.
func NewCondition(reader client.Reader, writer client.Client, key types.NamespacedName, condType apiv2.ConditionType) conditions.Condition {
	return &operatorCondition{reader: reader, writer: writer, key: key, condType: condType}
}

// Get returns the condition, or an error when it has never been set.
func (c *operatorCondition) Get(ctx context.Context) (*metav1.Condition, error) {
	oc := &apiv2.OperatorCondition{}
	if err := c.reader.Get(ctx, c.key, oc); err != nil {
		return nil, err
	}
	cond := meta.FindStatusCondition(oc.Spec.Conditions, string(c.condType))
	if cond == nil {
		return nil, errConditionNotSet
	}
	return cond, nil
}

var errConditionNotSet = errors.New("condition not set")

// Set writes the condition into the OperatorCondition's spec, keeping the
// other conditions.
func (c *operatorCondition) Set(ctx context.Context, status metav1.ConditionStatus, opts ...conditions.Option) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		oc := &apiv2.OperatorCondition{}
		if err := c.reader.Get(ctx, c.key, oc); err != nil {
			return err
		}
		cond := metav1.Condition{Type: string(c.condType), Status: status}
		for _, opt := range opts {
			opt(&cond)
		}
		meta.SetStatusCondition(&oc.Spec.Conditions, cond)
		return c.writer.Update(ctx, oc)
	})
}
