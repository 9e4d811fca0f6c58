package main

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	scapiv1alpha3 "github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
)

// TestVerdict_PassOnlyWhenEveryResultPasses: the test binaries exit 0 on a
// failed test, so the verdict is all that stands between a failing scorecard
// test and a green `make scorecard-local`.
func TestVerdict_PassOnlyWhenEveryResultPasses(t *testing.T) {
	result := func(state scapiv1alpha3.State) scapiv1alpha3.TestResult {
		return scapiv1alpha3.TestResult{Name: "t", State: state, Errors: []string{"why"}}
	}
	tests := []struct {
		name    string
		results []scapiv1alpha3.TestResult
		wantErr string
	}{
		{name: "all pass", results: []scapiv1alpha3.TestResult{result(scapiv1alpha3.PassState), result(scapiv1alpha3.PassState)}},
		{name: "no result", wantErr: "no result"},
		{name: "one fails", results: []scapiv1alpha3.TestResult{result(scapiv1alpha3.PassState), result(scapiv1alpha3.FailState)}, wantErr: "t: fail [why]"},
		{name: "error state", results: []scapiv1alpha3.TestResult{result(scapiv1alpha3.ErrorState)}, wantErr: "t: error [why]"},
		{name: "empty state", results: []scapiv1alpha3.TestResult{result("")}, wantErr: "t:  [why]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := verdict(scapiv1alpha3.TestStatus{Results: tt.results})
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}

// TestReadTests_RepositoryConfig reads the committed scorecard configuration:
// every test's program must have a binary, and a program without one fails
// before anything is run.
func TestReadTests_RepositoryConfig(t *testing.T) {
	g := NewWithT(t)
	config := filepath.Join("..", "..", "bundle", "tests", "scorecard", "config.yaml")
	bins := binaries{"scorecard-test": "/x/scorecard-test", "kraan-scorecard": "/x/kraan-scorecard"}
	tests, err := readTests(config, bins)
	g.Expect(err).NotTo(HaveOccurred())
	names := make([]string, 0, len(tests))
	for _, tc := range tests {
		names = append(names, tc.Entrypoint[1])
	}
	g.Expect(names).To(ContainElements("basic-check-spec", "olm-bundle-validation", "alm-examples-valid"))

	delete(bins, "kraan-scorecard")
	_, err = readTests(config, bins)
	g.Expect(err).To(MatchError(ContainSubstring("no --binary kraan-scorecard=PATH for test alm-examples-valid")))
}

// TestReadTests_RejectsEmptyConfiguration: a configuration without tests
// would otherwise pass by running nothing.
func TestReadTests_RejectsEmptyConfiguration(t *testing.T) {
	g := NewWithT(t)
	config := filepath.Join(t.TempDir(), "config.yaml")
	g.Expect(os.WriteFile(config, []byte("apiVersion: scorecard.operatorframework.io/v1alpha3\nkind: Configuration\nstages: []\n"), 0o600)).To(Succeed())
	_, err := readTests(config, binaries{})
	g.Expect(err).To(MatchError(ContainSubstring("has no tests")))
}
