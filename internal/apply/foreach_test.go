package apply

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestForEach_reportsTheFirstFailureInOrder: the object named in a message
// is the first in the layer's order that failed, not the first whose request
// answered: here object 5 fails before object 2 does.
func TestForEach_reportsTheFirstFailureInOrder(t *testing.T) {
	objs := make([]*unstructured.Unstructured, 8)
	fiveFailed := make(chan struct{})
	err := forEach(context.Background(), objs, func(_ context.Context, i int) error {
		switch i {
		case 2:
			<-fiveFailed
			return errors.New("object 2")
		case 5:
			defer close(fiveFailed)
			return errors.New("object 5")
		}
		return nil
	})
	NewWithT(t).Expect(err).To(MatchError("object 2"))
}
