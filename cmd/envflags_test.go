package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// envOf is a lookup over a fixed environment.
func envOf(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

func TestFlagEnvName(t *testing.T) {
	g := NewWithT(t)
	g.Expect(flagEnvName("log-level")).To(Equal("KRAAN_LOG_LEVEL"))
	g.Expect(flagEnvName("max-oci-tag-pages")).To(Equal("KRAAN_MAX_OCI_TAG_PAGES"))
	g.Expect(flagEnvName("concurrent")).To(Equal("KRAAN_CONCURRENT"))
}

// A Subscription's spec.config.env is the only way OLM users configure the
// operator: every kind of flag must take its value from KRAAN_<NAME>.
func TestParseOptions_FlagsFromEnvironment(t *testing.T) {
	g := NewWithT(t)
	opts, err := parseOptionsEnv(nil, io.Discard, envOf(map[string]string{
		"KRAAN_CONCURRENT":              "9",                             // int
		"KRAAN_NO_CROSS_NAMESPACE_REFS": "true",                          // bool
		"KRAAN_DEFAULT_SERVICE_ACCOUNT": "tenant",                        // string
		"KRAAN_REQUEUE_DEPENDENCY":      "45s",                           // duration
		"KRAAN_MAX_CHART_SIZE":          "512Ki",                         // byte size
		"KRAAN_MAX_CHART_FILES":         "300",                           // a cap's count
		"KRAAN_MAX_ARTIFACT_FILE_SIZE":  "1Mi",                           // an artifact cap
		"KRAAN_FEATURE_GATES":           "UseHelm3Defaults=true",         // feature gates
		"KRAAN_WATCH_LABEL_SELECTOR":    "sharding.fluxcd.io/key=shard1", // selector
		"CONCURRENT":                    "7",                             // no prefix: not ours
	}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.concurrent).To(Equal(9))
	g.Expect(opts.noCrossNamespaceRefs).To(BeTrue())
	g.Expect(opts.defaultServiceAccount).To(Equal("tenant"))
	g.Expect(opts.requeueDependency).To(Equal(45 * time.Second))
	g.Expect(opts.chartFetch.MaxChartSize).To(Equal(int64(512 << 10)))
	g.Expect(opts.chartFetch.MaxChartFiles).To(Equal(300))
	g.Expect(opts.artifactLimits.MaxFileBytes).To(Equal(int64(1 << 20)))
	g.Expect(opts.helmDefaults.UseHelm3).To(BeTrue())
	g.Expect(opts.watchLabelSelector).To(Equal("sharding.fluxcd.io/key=shard1"))
	g.Expect(opts.fromEnv).To(Equal([]string{
		"KRAAN_CONCURRENT", "KRAAN_DEFAULT_SERVICE_ACCOUNT", "KRAAN_FEATURE_GATES", "KRAAN_MAX_ARTIFACT_FILE_SIZE",
		"KRAAN_MAX_CHART_FILES", "KRAAN_MAX_CHART_SIZE",
		"KRAAN_NO_CROSS_NAMESPACE_REFS", "KRAAN_REQUEUE_DEPENDENCY", "KRAAN_WATCH_LABEL_SELECTOR",
	}))
}

func TestParseOptions_CommandLineWinsOverEnvironment(t *testing.T) {
	g := NewWithT(t)
	opts, err := parseOptionsEnv([]string{"--concurrent=2", "--log-level=error"}, io.Discard,
		envOf(map[string]string{"KRAAN_CONCURRENT": "9", "KRAAN_LOG_LEVEL": "debug", "KRAAN_LOG_FORMAT": "console"}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.concurrent).To(Equal(2))
	g.Expect(opts.logLevel).To(Equal("error"))
	g.Expect(opts.logFormat).To(Equal("console"), "a flag not on the command line still comes from the environment")
	g.Expect(opts.fromEnv).To(Equal([]string{"KRAAN_LOG_FORMAT"}))
}

func TestParseOptions_EnvironmentValuesAreChecked(t *testing.T) {
	g := NewWithT(t)
	_, err := parseOptionsEnv(nil, io.Discard, envOf(map[string]string{"KRAAN_CONCURRENT": "many"}))
	g.Expect(err).To(MatchError(ContainSubstring(`invalid value "many" for KRAAN_CONCURRENT (--concurrent)`)))
	// The same checks as for the command line run on values from the environment.
	_, err = parseOptionsEnv(nil, io.Discard, envOf(map[string]string{"KRAAN_CONCURRENT": "0"}))
	g.Expect(err).To(MatchError(ContainSubstring("--concurrent must be at least 1")))
	_, err = parseOptionsEnv(nil, io.Discard, envOf(map[string]string{"KRAAN_FEATURE_GATES": "NoSuchGate=true"}))
	g.Expect(err).To(MatchError(ContainSubstring("KRAAN_FEATURE_GATES")))
}

func TestParseOptions_EveryFlagHasAnEnvironmentVariable(t *testing.T) {
	g := NewWithT(t)
	fs := newFlagSet(&options{}, io.Discard)
	env := map[string]string{}
	fs.VisitAll(func(f *flag.Flag) { env[flagEnvName(f.Name)] = f.DefValue })
	g.Expect(env).To(HaveLen(countFlags(fs)))
	opts, err := parseOptionsEnv(nil, io.Discard, envOf(env))
	g.Expect(err).NotTo(HaveOccurred(), "every flag's default, given through its variable, is accepted")
	g.Expect(opts.fromEnv).To(HaveLen(len(env)))
}

func TestRun_Help_NamesTheEnvironmentVariables(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	g.Expect(run(context.Background(), []string{"--help"}, &out)).To(Equal(0))
	g.Expect(out.String()).To(ContainSubstring("--log-level: KRAAN_LOG_LEVEL"))
}

func countFlags(fs *flag.FlagSet) int {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n
}

// docs/olm.md lists the variable of every flag: OLM users have no other way
// to learn them.
func TestDocs_ListEveryFlagVariable(t *testing.T) {
	g := NewWithT(t)
	doc, err := os.ReadFile(filepath.Join("..", "docs", "olm.md"))
	g.Expect(err).NotTo(HaveOccurred())
	newFlagSet(&options{}, io.Discard).VisitAll(func(f *flag.Flag) {
		g.Expect(string(doc)).To(ContainSubstring(fmt.Sprintf("| `%s` | `--%s` |", flagEnvName(f.Name), f.Name)))
	})
}
