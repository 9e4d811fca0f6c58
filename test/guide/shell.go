package guide

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Shell runs blocks with bash, one after another, as a reader pastes them
// into one terminal: variables a block sets are there for the next ones
// (every assignment is exported and kept in a state file), and every block
// runs in Dir, where the files a guide writes stay.
type Shell struct {
	// Dir is the working directory.
	Dir string
	// env is the environment of every block: the test's variables over
	// os.Environ.
	env map[string]string
	// standIns replace a command a test cannot run literally (reading a
	// Pod's log where the operator runs as a process) by one with the same
	// output; used records which were needed, so a stand-in the guide no
	// longer calls for fails the test.
	standIns map[string]string
	used     map[string]bool
	// given are the variables the test set with Set: they win over what
	// an earlier block kept in the state file.
	given map[string]string
	state string
}

// NewShell returns a shell working in dir with env (NAME=value) over the
// process's environment.
func NewShell(dir string, env ...string) *Shell {
	s := &Shell{Dir: dir, env: map[string]string{}, standIns: map[string]string{}, used: map[string]bool{},
		given: map[string]string{}, state: filepath.Join(dir, ".guide-state")}
	for _, kv := range append(os.Environ(), env...) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			s.env[k] = v
		}
	}
	return s
}

// Set gives variables the next blocks see, overriding what a block set
// before: the values of a settings block.
func (s *Shell) Set(kv ...string) {
	for i := 0; i+1 < len(kv); i += 2 {
		s.given[kv[i]] = kv[i+1]
	}
}

// StandIn replaces command, wherever a block holds it, by replacement.
func (s *Shell) StandIn(command, replacement string) {
	s.standIns[command] = replacement
}

// UnusedStandIns lists the stand-ins no block called for.
func (s *Shell) UnusedStandIns() []string {
	var out []string
	for _, c := range slices.Sorted(maps.Keys(s.standIns)) {
		if !s.used[c] {
			out = append(out, c)
		}
	}
	return out
}

// Run runs the blocks in order and returns what they printed (stdout and
// stderr). A settings block is not run: it must set exactly variables the
// test gave with Set. The first block that fails stops the run.
func (s *Shell) Run(ctx context.Context, blocks ...Block) (string, error) {
	var out bytes.Buffer
	for _, b := range blocks {
		if names, ok := b.Settings(); ok {
			for _, n := range names {
				if _, given := s.given[n]; !given {
					return out.String(), fmt.Errorf("block at %s sets %s, which the test does not give", b, n)
				}
			}
			continue
		}
		text := b.Text
		for command, replacement := range s.standIns {
			if strings.Contains(text, command) {
				text = strings.ReplaceAll(text, command, replacement)
				s.used[command] = true
			}
		}
		fmt.Fprintf(&out, "$ %s\n", strings.ReplaceAll(b.Text, "\n", "\n  "))
		if err := s.run(ctx, text, &out); err != nil {
			return out.String(), fmt.Errorf("block at %s: %w\n%s", b, err, out.String())
		}
	}
	return out.String(), nil
}

func (s *Shell) run(ctx context.Context, text string, out *bytes.Buffer) error {
	var script strings.Builder
	script.WriteString("set -euo pipefail\nset -a\n")
	script.WriteString(`if [ -f "$GUIDE_STATE" ]; then . "$GUIDE_STATE"; fi` + "\n")
	for _, k := range slices.Sorted(maps.Keys(s.given)) {
		fmt.Fprintf(&script, "%s=%s\n", k, shellQuote(s.given[k]))
	}
	script.WriteString(text + "\n")
	// Keep what the block set for the next block; -p prints declare -x lines
	// bash reads back.
	script.WriteString(`export -p | grep -v -E '^declare -x (GUIDE_STATE|PWD|OLDPWD|SHLVL|_)=' > "$GUIDE_STATE.new" && mv "$GUIDE_STATE.new" "$GUIDE_STATE"` + "\n")
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = s.Dir
	env := make([]string, 0, len(s.env)+1)
	for k, v := range s.env {
		env = append(env, k+"="+v)
	}
	env = append(env, "GUIDE_STATE="+s.state)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = out, out
	return cmd.Run()
}

// shellQuote quotes v for bash.
func shellQuote(v string) string {
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}
