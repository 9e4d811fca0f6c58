package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	scapiv1alpha3 "github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
)

const csvFile = "kraan-operator.clusterserviceversion.yaml"

func runTest(t *testing.T, bundle string) scapiv1alpha3.TestResult {
	t.Helper()
	g := NewWithT(t)
	var stdout, stderr bytes.Buffer
	g.Expect(run([]string{"--bundle", bundle, "alm-examples-valid"}, &stdout, &stderr)).To(Equal(0), stderr.String())
	status := scapiv1alpha3.TestStatus{}
	g.Expect(json.Unmarshal(stdout.Bytes(), &status)).To(Succeed())
	g.Expect(status.Results).To(HaveLen(1))
	return status.Results[0]
}

// copyBundle copies the repository's bundle/ so a test can break it.
func copyBundle(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "bundle")
	NewWithT(t).Expect(os.CopyFS(dst, os.DirFS(filepath.Join("..", "..", "bundle")))).To(Succeed())
	return dst
}

func TestALMExamplesValid_PassesOnTheBundle(t *testing.T) {
	g := NewWithT(t)
	r := runTest(t, filepath.Join("..", "..", "bundle"))
	g.Expect(r.State).To(Equal(scapiv1alpha3.PassState), strings.Join(r.Errors, "\n"))
	g.Expect(r.Log).To(ContainSubstring("AddonsLayer bootstrap: valid"))
}

func TestALMExamplesValid_FailsNamingTheField(t *testing.T) {
	g := NewWithT(t)
	bundle := copyBundle(t)
	path := filepath.Join(bundle, "manifests", csvFile)
	data, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	broken := strings.Replace(string(data), `"count": 3`, `"count": "three"`, 1)
	g.Expect(broken).NotTo(Equal(string(data)), "the sample Habitat redis has count 3")
	g.Expect(os.WriteFile(path, []byte(broken), 0o600)).To(Succeed())

	r := runTest(t, bundle)
	g.Expect(r.State).To(Equal(scapiv1alpha3.FailState))
	g.Expect(r.Errors).To(ContainElement(And(ContainSubstring("Habitat redis"), ContainSubstring("spec.count"))))
}

func TestALMExamplesValid_ErrorsWithoutACSV(t *testing.T) {
	g := NewWithT(t)
	bundle := copyBundle(t)
	g.Expect(os.Remove(filepath.Join(bundle, "manifests", csvFile))).To(Succeed())
	r := runTest(t, bundle)
	g.Expect(r.State).To(Equal(scapiv1alpha3.ErrorState))
}
