package main

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The command line wins, then the environment, then the settings ConfigMap,
// then the default; a key naming no flag, or a value a flag refuses, is an
// error naming the key.
func TestParseOptionsWithSettings_Precedence(t *testing.T) {
	g := NewWithT(t)
	env := map[string]string{"KRAAN_CONCURRENT": "6"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	data := map[string]string{"concurrent": "8", "max-render-memory": "512Mi", "min-retry-delay": "2s", "log-level": "debug"}
	opts, err := parseOptionsWithSettings([]string{"--min-retry-delay=1s"}, io.Discard, lookup, data)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.minRetryDelay).To(Equal(time.Second), "the command line wins")
	g.Expect(opts.concurrent).To(Equal(6), "the environment wins over the ConfigMap")
	g.Expect(opts.renderLimits.Memory).To(Equal(int64(512 << 20)))
	g.Expect(opts.fromSettings).To(Equal([]string{"log-level", "max-render-memory"}))

	_, err = parseOptionsWithSettings(nil, io.Discard, lookup, map[string]string{"max-render-memroy": "1Gi"})
	g.Expect(err).To(MatchError(ContainSubstring(`key "max-render-memroy"`)))
	_, err = parseOptionsWithSettings(nil, io.Discard, lookup, map[string]string{"render-timeout": "soon"})
	g.Expect(err).To(MatchError(ContainSubstring(`invalid value for key "render-timeout"`)))
}

// TestSettings_FromTheCluster: issue #43, item 3. Without a Subscription
// (OLM v1) the operator is configured from a ConfigMap of its namespace:
// read at start, and a change stops the operator so that its Deployment
// restarts it with the new settings. A ConfigMap with a mistake is logged and
// left out: the operator starts with its flags. (run itself is started once
// per test process, by TestRun_ServesProbesMetricsAndLeaseThenShutsDown:
// controller-runtime's controller names and metrics are process-wide.)
func TestSettings_FromTheCluster(t *testing.T) {
	g := NewWithT(t)
	env, kubeconfig := startEnv(t)
	before := settingsPollInterval
	settingsPollInterval = 100 * time.Millisecond
	t.Cleanup(func() { settingsPollInterval = before })
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: settingsConfigMap},
		Data: map[string]string{"max-concurrent-renders": "3", "render-timeout": "45s"}}
	g.Expect(env.Client.Create(ctx, cm)).To(Succeed())
	args := []string{"--kubeconfig", kubeconfig, "--leader-election-namespace", "default", "--max-concurrent-renders", "1"}
	opts, err := parseOptions(args, io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	var logged []string
	var mu sync.Mutex
	logger := funcr.New(func(_, args string) { mu.Lock(); defer mu.Unlock(); logged = append(logged, args) }, funcr.Options{})
	messages := func() []string { mu.Lock(); defer mu.Unlock(); return append([]string{}, logged...) }

	got, read := withSettings(ctx, logger, args, io.Discard, opts)
	g.Expect(got.renderLimits.Timeout).To(Equal(45 * time.Second))
	g.Expect(got.renderLimits.Concurrent).To(Equal(1), "the command line wins")
	g.Expect(messages()).To(ContainElement(And(ContainSubstring("Flags set from the settings ConfigMap"), ContainSubstring("render-timeout"))))
	g.Expect(messages()).NotTo(ContainElement(ContainSubstring("45s")), "values are not logged")

	// A change stops the operator (its manager's context), to be restarted.
	cfg, err := restConfig(kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	stopped := make(chan struct{})
	watch := &settingsWatch{cfg: cfg, read: read, restart: func() { close(stopped) }, log: logger}
	watchCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = watch.Start(watchCtx) }()
	g.Consistently(stopped, 500*time.Millisecond).ShouldNot(BeClosed(), "an unchanged ConfigMap stops nothing")
	cm.Data["render-timeout"] = "1m"
	g.Expect(env.Client.Update(ctx, cm)).To(Succeed())
	g.Eventually(stopped).WithTimeout(10 * time.Second).Should(BeClosed())
	g.Expect(messages()).To(ContainElement(ContainSubstring("The settings ConfigMap changed")))

	// A mistake in the ConfigMap is logged and left out; the flags stand.
	cm.Data["render-timeout"] = "never"
	g.Expect(env.Client.Update(ctx, cm)).To(Succeed())
	got, read = withSettings(ctx, logger, args, io.Discard, opts)
	g.Expect(got).To(BeIdenticalTo(opts))
	g.Expect(read.data).To(HaveKeyWithValue("render-timeout", "never"))
	g.Expect(messages()).To(ContainElement(And(ContainSubstring("Ignoring the settings ConfigMap"), ContainSubstring(`key \"render-timeout\"`))))
}
