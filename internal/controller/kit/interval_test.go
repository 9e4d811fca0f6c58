package kit_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kraan-io/kraan-operator/internal/controller/kit"
)

func TestIntervalFloor_Apply(t *testing.T) {
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: "u"}}
	tests := []struct {
		name       string
		floor      *kit.IntervalFloor
		asked      time.Duration
		want       time.Duration
		wantLogged bool
	}{
		{name: "below the floor: the floor", floor: kit.NewIntervalFloor(30 * time.Second), asked: time.Millisecond,
			want: 30 * time.Second, wantLogged: true},
		{name: "at or above the floor: as asked", floor: kit.NewIntervalFloor(30 * time.Second), asked: time.Minute, want: time.Minute},
		{name: "zero (no periodic reconcile) stays zero", floor: kit.NewIntervalFloor(30 * time.Second), asked: 0, want: 0},
		{name: "no floor: as asked", floor: kit.NewIntervalFloor(0), asked: time.Millisecond, want: time.Millisecond},
		{name: "nil floor: as asked", asked: time.Millisecond, want: time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var out bytes.Buffer
			ctx := logr.NewContext(context.Background(), funcr.New(func(_, args string) { out.WriteString(args + "\n") }, funcr.Options{}))
			g.Expect(tt.floor.Apply(ctx, obj, "spec.interval", tt.asked)).To(Equal(tt.want))
			g.Expect(out.String() != "").To(Equal(tt.wantLogged), out.String())
		})
	}
}

// The floor is said once per object, field and asked period, not at every
// reconcile.
func TestIntervalFloor_Apply_LogsOnce(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	ctx := logr.NewContext(context.Background(), funcr.New(func(_, args string) { out.WriteString(args + "\n") }, funcr.Options{}))
	floor := kit.NewIntervalFloor(30 * time.Second)
	a := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: "a"}}
	b := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: "b"}}
	for range 100 {
		floor.Apply(ctx, a, "spec.interval", time.Millisecond)
	}
	g.Expect(strings.Count(out.String(), "\n")).To(Equal(1))
	floor.Apply(ctx, a, "spec.interval", 2*time.Millisecond) // asked for another period
	floor.Apply(ctx, b, "spec.interval", time.Millisecond)   // another object
	g.Expect(strings.Count(out.String(), "\n")).To(Equal(3))
	g.Expect(out.String()).To(ContainSubstring(`"asked"="1ms"`))
	g.Expect(out.String()).To(ContainSubstring(`"used"="30s"`))
}
