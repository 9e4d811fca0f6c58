// Command scorecardlocal runs every test of a bundle's scorecard
// configuration without a cluster, as `make scorecard-local`: for each test it
// runs the binary the test's image would run (operator-sdk's scorecard-test,
// our kraan-scorecard) with the test's entrypoint arguments, reads the
// scorecard v1alpha3 TestStatus it prints, and fails unless every result is
// `pass`. Suggestions and errors are printed.
//
//	scorecardlocal --bundle bundle \
//	    --binary scorecard-test=PATH --binary kraan-scorecard=PATH
//
// The test binaries read the bundle from the fixed path /bundle, where the
// scorecard pod mounts it, and scorecard-test has no flag to change that: the
// bundle is copied there (a real directory; a symlink is refused), which
// needs root, and removed afterwards. A lock file serialises runs on one
// machine, and a directory at /bundle that an earlier run did not leave is
// never removed.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	scapiv1alpha3 "github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	"sigs.k8s.io/yaml"
)

// Where the test binaries look for the bundle, and how scorecardlocal guards it.
const (
	podBundleRoot = "/bundle"
	lockFile      = "/bundle.lock"
	// ownerMarker in /bundle says scorecardlocal made it, so a later run may
	// remove what a killed run left behind.
	ownerMarker = ".kraan-scorecard-local"
)

func main() {
	// Ctrl-C or SIGTERM stops the running test binary but not scorecardlocal,
	// which still removes /bundle and releases the lock.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// binaries maps an entrypoint's program name to the path of its binary.
type binaries map[string]string

func (b binaries) String() string { return fmt.Sprint(map[string]string(b)) }

func (b binaries) Set(v string) error {
	name, path, ok := strings.Cut(v, "=")
	if !ok || name == "" || path == "" {
		return fmt.Errorf("want NAME=PATH, got %q", v)
	}
	b[name] = path
	return nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("scorecardlocal", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bundle := fs.String("bundle", "bundle", "Directory of the bundle (manifests/, metadata/, tests/scorecard/config.yaml).")
	bins := binaries{}
	fs.Var(bins, "binary", "NAME=PATH: the binary of entrypoints whose program is NAME (repeatable).")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	tests, err := readTests(filepath.Join(*bundle, "tests", "scorecard", "config.yaml"), bins)
	if err != nil {
		fmt.Fprintln(stderr, "scorecardlocal:", err)
		return 1
	}
	release, err := placeBundle(*bundle)
	if err != nil {
		fmt.Fprintln(stderr, "scorecardlocal:", err)
		return 1
	}
	failed := runTests(ctx, tests, bins, stdout)
	if err := release(); err != nil {
		fmt.Fprintln(stderr, "scorecardlocal:", err)
		return 1
	}
	if failed > 0 {
		fmt.Fprintf(stdout, "%d of %d scorecard tests did not pass\n", failed, len(tests))
		return 1
	}
	return 0
}

// readTests returns the tests of every stage of the scorecard configuration,
// after checking that each entrypoint's program has a binary, so that a
// missing one fails before /bundle is touched.
func readTests(config string, bins binaries) ([]scapiv1alpha3.TestConfiguration, error) {
	data, err := os.ReadFile(config)
	if err != nil {
		return nil, err
	}
	cfg := scapiv1alpha3.Configuration{}
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", config, err)
	}
	var tests []scapiv1alpha3.TestConfiguration
	for _, stage := range cfg.Stages {
		tests = append(tests, stage.Tests...)
	}
	if len(tests) == 0 {
		return nil, fmt.Errorf("%s has no tests", config)
	}
	for _, t := range tests {
		if len(t.Entrypoint) < 2 {
			return nil, fmt.Errorf("%s: test with image %s: the entrypoint needs a program and a test name", config, t.Image)
		}
		if bins[t.Entrypoint[0]] == "" {
			return nil, fmt.Errorf("%s: no --binary %s=PATH for test %s", config, t.Entrypoint[0], t.Entrypoint[1])
		}
	}
	return tests, nil
}

// runTests runs each test, prints its verdict and returns how many did not pass.
func runTests(ctx context.Context, tests []scapiv1alpha3.TestConfiguration, bins binaries, out io.Writer) int {
	failed := 0
	for _, t := range tests {
		name := strings.Join(t.Entrypoint[1:], " ")
		status, err := runTest(ctx, bins[t.Entrypoint[0]], t.Entrypoint[1:])
		if err == nil {
			err = verdict(status)
		}
		if err != nil {
			failed++
			fmt.Fprintf(out, "FAIL  %s: %v\n", name, err)
		} else {
			fmt.Fprintf(out, "pass  %s\n", name)
		}
		for _, s := range suggestions(status) {
			fmt.Fprintf(out, "      suggestion: %s\n", s)
		}
	}
	return failed
}

// runTest runs one test binary and decodes the TestStatus it prints. The
// binaries exit 0 whatever the test's outcome; a non-zero exit is a crash.
func runTest(ctx context.Context, bin string, args []string) (scapiv1alpha3.TestStatus, error) {
	status := scapiv1alpha3.TestStatus{}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return status, fmt.Errorf("%s: %w: %s", bin, err, strings.TrimSpace(stderr.String()))
	}
	if err := json.Unmarshal(stdout.Bytes(), &status); err != nil {
		return status, fmt.Errorf("%s printed no TestStatus: %w: %s", bin, err, strings.TrimSpace(stdout.String()))
	}
	return status, nil
}

// verdict is nil when status holds at least one result and every result
// passed; otherwise it names the states and quotes the errors.
func verdict(status scapiv1alpha3.TestStatus) error {
	if len(status.Results) == 0 {
		return errors.New("no result")
	}
	var problems []string
	for _, r := range status.Results {
		if r.State == scapiv1alpha3.PassState {
			continue
		}
		problems = append(problems, fmt.Sprintf("%s: %s %v", r.Name, r.State, r.Errors))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// suggestions returns the results' suggestions, sorted and without repeats.
func suggestions(status scapiv1alpha3.TestStatus) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range status.Results {
		for _, s := range r.Suggestions {
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	sort.Strings(out)
	return out
}

// placeBundle copies bundle to /bundle under an exclusive lock, and returns
// the function that removes it and releases the lock.
func placeBundle(bundle string) (release func() error, err error) {
	lock, err := os.OpenFile(lockFile, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the test binaries read the bundle from %s, which needs root: %w", podBundleRoot, err)
	}
	// Another run on this machine (another work tree) uses /bundle: wait for it.
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("locking %s: %w", lockFile, err)
	}
	release = func() error {
		err := os.RemoveAll(podBundleRoot)
		return errors.Join(err, lock.Close()) // closing releases the lock
	}
	if err := removeOwnBundle(); err != nil {
		_ = lock.Close()
		return nil, err
	}
	// The marker goes in first: a run killed while copying leaves a /bundle
	// that the next run knows it may remove.
	if err := os.Mkdir(podBundleRoot, 0o755); err != nil {
		_ = lock.Close()
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(podBundleRoot, ownerMarker), nil, 0o600); err != nil {
		return nil, errors.Join(err, release())
	}
	if err := os.CopyFS(podBundleRoot, os.DirFS(bundle)); err != nil {
		return nil, errors.Join(fmt.Errorf("copying %s to %s: %w", bundle, podBundleRoot, err), release())
	}
	return release, nil
}

// removeOwnBundle removes a /bundle an earlier run left behind, and refuses
// to remove one that it did not make.
func removeOwnBundle() error {
	_, err := os.Lstat(podBundleRoot)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(podBundleRoot, ownerMarker)); err != nil {
		return fmt.Errorf("%s exists and was not made by scorecardlocal (it has no %s): move it away first", podBundleRoot, ownerMarker)
	}
	return os.RemoveAll(podBundleRoot)
}
