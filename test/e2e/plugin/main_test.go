// Package plugin_test runs every `kubectl kraan` command against the local
// control plane, with the operator's manager, a Git server, a Helm
// repository and Flux source-controller (test/env), shared by the package's
// tests. Commands run in process through plugin.Run with the plane's
// kubeconfig, except in TestBinary, which builds and runs the real binary.
package plugin_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/format"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/plugin"
	"github.com/kraan-io/kraan-operator/test/env"
)

// update rewrites the golden files: go test ./test/e2e/plugin -update.
var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// The shared environment and what TestMain deployed in it.
var (
	e *env.Env
	// chartDir is the test chart, published as 0.1.0.
	chartDir string
)

// The fixtures: layer base (Namespace plug, HelmRelease plug/app of chart
// diffy) and layer top (two ConfigMaps and a Secret), top depending on base.
const (
	ns          = "plug"
	releaseName = "app"
)

func TestMain(m *testing.M) {
	flag.Parse()
	// A golden file's mismatch is shown whole.
	format.TruncatedDiff, format.MaxLength = false, 0
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "kraan-plugin-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	opts, err := env.OptionsFromEnv(dir)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		e, err = env.Start(ctx, opts)
		if err == nil {
			err = deployFixtures(ctx)
		}
		cancel()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "plugin e2e:", err)
		if e != nil {
			_ = e.Stop()
		}
		return 1
	}
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping:", err)
	}
	return code
}

// deployFixtures publishes the chart, commits the layers' directories,
// creates the layers and waits until both are Deployed.
func deployFixtures(ctx context.Context) error {
	var err error
	if chartDir, err = filepath.Abs("testdata/charts/diffy"); err != nil {
		return err
	}
	if err := e.AddChart(chartDir, "0.1.0"); err != nil {
		return err
	}
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}
	values := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-values"},
		Data: map[string]string{"values.yaml": "message: hello\n"}}
	if err := e.Client.Create(ctx, values); err != nil {
		return err
	}
	if _, err := e.Commit(ctx, "layers 0.1.0", map[string]string{"layers": "testdata/layers"}); err != nil {
		return err
	}
	for _, l := range []*kraanv1.AddonsLayer{newLayer("base", "./layers/base"), newLayer("top", "./layers/top", "base@0.1.0")} {
		if err := e.Client.Create(ctx, l); err != nil {
			return err
		}
	}
	return waitDeployed(ctx, "base", "top")
}

func newLayer(name, path string, dependsOn ...string) *kraanv1.AddonsLayer {
	return &kraanv1.AddonsLayer{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kraanv1.AddonsLayerSpec{
			Version:  "0.1.0",
			Source:   kraanv1.SourceSpec{Name: env.GitRepositoryName, Namespace: env.FluxNamespace, Path: path},
			Prereqs:  kraanv1.PrereqsSpec{DependsOn: dependsOn},
			Interval: metav1.Duration{Duration: time.Hour},
			Timeout:  metav1.Duration{Duration: 2 * time.Minute},
		},
	}
}

// waitDeployed polls until every layer is Deployed at its generation.
func waitDeployed(ctx context.Context, names ...string) error {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		done := true
		last := ""
		for _, n := range names {
			l := &kraanv1.AddonsLayer{}
			if err := e.Client.Get(ctx, client.ObjectKey{Name: n}, l); err != nil {
				return err
			}
			if l.Status.State != kraanv1.DeployedState || l.Status.ObservedGeneration != l.Generation {
				done = false
				last = fmt.Sprintf("layer %s is %s", n, l.Status.State)
			}
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("layers not Deployed in time: %s (logs in %s)", last, e.Dir)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// result is what one command printed and returned.
type result struct {
	code   int
	stdout string
	stderr string
}

// kraan runs `kubectl kraan args…` in process against the plane.
func kraan(t *testing.T, args ...string) result {
	t.Helper()
	return kraanCtx(t.Context(), args...)
}

func kraanCtx(ctx context.Context, args ...string) result {
	var out, errOut bytes.Buffer
	args = append([]string{"--kubeconfig", e.Kubeconfig}, args...)
	code := plugin.Run(ctx, args, genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// volatile are the parts of an output that change from run to run.
var volatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`sha1:[0-9a-f]{40}`), "sha1:<commit>"},
	{regexp.MustCompile(`(?m)\b\d+(\.\d+)?(ms|s|m|h|d)\d*[smh]?\b`), "<age>"},
	{regexp.MustCompile(`http://127\.0\.0\.1:\d+`), "http://127.0.0.1:<port>"},
	{regexp.MustCompile(`sha256:[0-9a-f]{64}`), "sha256:<digest>"},
	// An age's width changes the padding of the AGE column.
	{regexp.MustCompile(`<age> +`), "<age>   "},
	{regexp.MustCompile(`AGE +`), "AGE   "},
}

// expectGolden compares out, with volatile parts replaced, with
// testdata/golden/<name>, or writes it with -update.
func expectGolden(t *testing.T, name, out string) {
	t.Helper()
	for _, v := range volatile {
		out = v.re.ReplaceAllString(out, v.with)
	}
	path := filepath.Join("testdata", "golden", name)
	if *update {
		NewWithT(t).Expect(os.WriteFile(path, []byte(out), 0o600)).To(Succeed())
		return
	}
	want, err := os.ReadFile(path)
	NewWithT(t).Expect(err).NotTo(HaveOccurred(), "run with -update to create %s", path)
	NewWithT(t).Expect(out).To(Equal(string(want)), "golden file %s (run with -update after checking the change)", path)
}

// runTo runs a command with its standard output going to out, and returns
// its exit code.
func runTo(ctx context.Context, out io.Writer, args ...string) int {
	args = append([]string{"--kubeconfig", e.Kubeconfig}, args...)
	return plugin.Run(ctx, args, genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: out, ErrOut: io.Discard})
}

// runWith runs a command against the cluster of another kubeconfig.
func runWith(t *testing.T, kubeconfig string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	args = append([]string{"--kubeconfig", kubeconfig}, args...)
	code := plugin.Run(t.Context(), args, genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

func writeFile(path string, data []byte) error { return os.WriteFile(path, data, 0o600) }
