package operator

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

var keyRef = types.NamespacedName{Namespace: "kraan-system", Name: DefaultRecordKeySecret}

func TestLoadOrCreateRecordKey_CreatesARandomKeyOnceAndKeepsIt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	first, err := loadOrCreateRecordKey(ctx, c, keyRef)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first).To(HaveLen(recordKeyLength))
	again, err := loadOrCreateRecordKey(ctx, c, keyRef)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(first), "a restart signs with the same key")
}

func TestLoadOrCreateRecordKey_RefusesAShortKey(t *testing.T) {
	g := NewWithT(t)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: keyRef.Namespace, Name: keyRef.Name},
		Data: map[string][]byte{recordKeyField: []byte("password")}}
	c := fake.NewClientBuilder().WithObjects(secret).Build()
	_, err := loadOrCreateRecordKey(context.Background(), c, keyRef)
	g.Expect(err).To(MatchError(ContainSubstring("kraan-system/kraan-release-record-key must hold at least 16 bytes")))
	g.Expect(err.Error()).NotTo(ContainSubstring("password"), "never the key")
}
