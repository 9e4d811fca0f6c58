package main

import (
	"flag"
	"fmt"
	"sort"
	"strings"
)

// envPrefix starts the name of the environment variable that sets a flag:
// KRAAN_ and the flag's name in upper case with dashes as underscores,
// --max-chart-size is KRAAN_MAX_CHART_SIZE. OLM can pass no arguments to the
// operator (a Subscription's spec.config sets environment variables, not
// arguments), so every flag can also come from the environment.
const envPrefix = "KRAAN_"

// flagEnvName is the environment variable that sets the flag name.
func flagEnvName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// setFlagsFromEnv sets every flag of fs not given on the command line from
// its environment variable, when lookup finds one: the command line wins,
// then the environment, then the flag's default. Call it after fs.Parse. It
// returns the names of the variables it used, sorted, for the start-up log
// (names only: a value may be something an operator would rather not log).
func setFlagsFromEnv(fs *flag.FlagSet, lookup func(string) (string, bool)) ([]string, error) {
	onCommandLine := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCommandLine[f.Name] = true })
	var used []string
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || onCommandLine[f.Name] {
			return
		}
		env := flagEnvName(f.Name)
		value, ok := lookup(env)
		if !ok {
			return
		}
		if setErr := fs.Set(f.Name, value); setErr != nil {
			err = fmt.Errorf("invalid value %q for %s (--%s): %w", value, env, f.Name, setErr)
			return
		}
		used = append(used, env)
	})
	sort.Strings(used)
	return used, err
}
