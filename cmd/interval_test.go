package main

import (
	"io"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kraan-io/kraan-operator/internal/controller/kit"
)

func TestParseOptions_MinReconcileInterval(t *testing.T) {
	g := NewWithT(t)
	none := func(string) (string, bool) { return "", false }
	opts, err := parseOptionsEnv(nil, io.Discard, none)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.minReconcileInterval).To(Equal(kit.DefaultMinReconcileInterval))

	env := func(name string) (string, bool) { return "1m", name == "KRAAN_MIN_RECONCILE_INTERVAL" }
	opts, err = parseOptionsEnv(nil, io.Discard, env)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.minReconcileInterval).To(Equal(time.Minute))

	opts, err = parseOptionsEnv([]string{"--min-reconcile-interval=0"}, io.Discard, none)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.minReconcileInterval).To(BeZero(), "0 keeps every period as asked")

	_, err = parseOptionsEnv([]string{"--min-reconcile-interval=-1s"}, io.Discard, none)
	g.Expect(err).To(MatchError(ContainSubstring("--min-reconcile-interval")))
}
