package pace

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// BenchmarkPacer_Wave runs a wave of 10,000 releases through a Pacer of 500
// slots, as the reconciler drives it: every release asks once, then each
// run's end frees its slot and the releases given a turn ask again. The
// namespaces are spread round robin over the releases; one namespace is the
// plain FIFO case, 10,000 the most namespaces the order has to weigh.
func BenchmarkPacer_Wave(b *testing.B) {
	for _, namespaces := range []int{1, 100, 10_000} {
		b.Run(fmt.Sprintf("namespaces=%d", namespaces), func(b *testing.B) {
			keys := make([]types.NamespacedName, 10_000)
			for i := range keys {
				keys[i] = types.NamespacedName{Namespace: fmt.Sprintf("ns%d", i%namespaces), Name: fmt.Sprintf("r%d", i)}
			}
			for b.Loop() {
				runWave(b, keys)
			}
		})
	}
}

// runWave admits keys, then ends the runs one at a time, oldest first, each
// end letting the releases given a turn in.
func runWave(b *testing.B, keys []types.NamespacedName) {
	var turns []types.NamespacedName
	p := New(Options{Min: 500, Max: 500, OnTurn: func(k types.NamespacedName) { turns = append(turns, k) }})
	var rolling []types.NamespacedName
	for _, k := range keys {
		if ok, _ := p.Admit(k); ok {
			rolling = append(rolling, k)
		}
	}
	done := 0
	for ; len(rolling) > 0; done++ {
		p.Forget(rolling[0])
		rolling = rolling[1:]
		for _, k := range turns {
			if ok, _ := p.Admit(k); ok {
				rolling = append(rolling, k)
			}
		}
		turns = turns[:0]
	}
	if done != len(keys) {
		b.Fatalf("%d of %d releases rolled out", done, len(keys))
	}
}
