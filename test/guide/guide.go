// Package guide runs the shell blocks of a Markdown guide as written, so a
// guide cannot drift from what works: an end-to-end test reads the blocks out
// of docs/*.md, runs them in order with bash on the local plane, and checks
// what they did. A block the test never ran fails the test (Guide.NotRun), so
// a step added to a guide is a step the test must run.
//
// Guides name what differs between clusters (a namespace, a release) with
// shell variables. A block made only of assignments (`NS=apps NAME=podinfo`)
// shows the reader example values; the test gives its own values for exactly
// those variables instead of running it (Shell.Set).
package guide

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Block is one fenced shell block (```sh) of a guide.
type Block struct {
	// Section is the nearest heading above the block, without its #s.
	Section string
	// Step is the number of the numbered list item the block belongs to (the
	// last "N." item since the heading), 0 outside one.
	Step int
	// Line is the line of the opening fence, from 1.
	Line int
	// Text is the block's content, its indentation removed.
	Text string
}

func (b Block) String() string {
	return fmt.Sprintf("line %d (%q, step %d)", b.Line, b.Section, b.Step)
}

// assignment is one shell assignment word: NAME=value.
var assignment = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`)

// Settings returns the variables the block sets when the block is only
// assignments (comments aside): the values a reader fills in.
func (b Block) Settings() ([]string, bool) {
	var names []string
	for line := range strings.SplitSeq(b.Text, "\n") {
		line, _, _ = strings.Cut(line, "#")
		for word := range strings.FieldsSeq(line) {
			if !assignment.MatchString(word) {
				return nil, false
			}
			name, _, _ := strings.Cut(word, "=")
			names = append(names, name)
		}
	}
	return names, len(names) > 0
}

// Guide is a Markdown file's shell blocks, and which of them a test ran.
type Guide struct {
	Path   string
	Blocks []Block
	ran    map[int]bool
}

var (
	heading  = regexp.MustCompile(`^#+\s+(.*)$`)
	listItem = regexp.MustCompile(`^(\d+)\.\s`)
	fence    = regexp.MustCompile("^(\\s*)```(\\w*)\\s*$")
)

// shellLangs are the languages of a guide's commands.
var shellLangs = []string{"sh", "bash", "shell"}

// Read parses the guide at path.
func Read(path string) (*Guide, error) {
	return read(path, shellLangs...)
}

// Parse reads the shell blocks of Markdown text. Blocks in another language
// (yaml, text) are not commands and are left out.
func Parse(text string) (*Guide, error) {
	return parse(text, shellLangs...)
}

// ReadBlocks returns the fenced blocks of the Markdown file at path written in
// one of langs (such as "yaml"), their indentation removed.
func ReadBlocks(path string, langs ...string) ([]Block, error) {
	g, err := read(path, langs...)
	if err != nil {
		return nil, err
	}
	return g.Blocks, nil
}

func read(path string, langs ...string) (*Guide, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	g, err := parse(string(data), langs...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	g.Path = path
	return g, nil
}

func parse(text string, langs ...string) (*Guide, error) {
	p := &parser{guide: &Guide{ran: map[int]bool{}}, langs: langs}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		p.line(n, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if p.fenced {
		return nil, fmt.Errorf("a fenced block is not closed")
	}
	return p.guide, nil
}

// parser is Parse's state between lines.
type parser struct {
	guide   *Guide
	langs   []string // the languages of the blocks kept
	section string
	step    int
	// fenced is true inside a fenced block; open is the block being read
	// when it is in one of langs, indent its fence's indentation.
	fenced bool
	open   *Block
	indent string
}

func (p *parser) line(n int, line string) {
	if p.fenced {
		p.inBlock(line)
		return
	}
	if m := fence.FindStringSubmatch(line); m != nil {
		p.fenced = true
		if slices.Contains(p.langs, m[2]) {
			p.open, p.indent = &Block{Section: p.section, Step: p.step, Line: n}, m[1]
		}
		return
	}
	if m := heading.FindStringSubmatch(line); m != nil {
		p.section, p.step = strings.TrimSpace(m[1]), 0
		return
	}
	if m := listItem.FindStringSubmatch(line); m != nil {
		p.step, _ = strconv.Atoi(m[1])
	}
}

// inBlock reads a line of a fenced block: its closing fence, or content.
func (p *parser) inBlock(line string) {
	if m := fence.FindStringSubmatch(line); m != nil && m[2] == "" {
		if p.open != nil {
			p.open.Text = strings.TrimSuffix(p.open.Text, "\n")
			p.guide.Blocks = append(p.guide.Blocks, *p.open)
		}
		p.fenced, p.open = false, nil
		return
	}
	if p.open != nil {
		p.open.Text += strings.TrimPrefix(line, p.indent) + "\n"
	}
}

// Step returns the blocks of step n of section (step 0: the blocks of the
// section outside a numbered item), marking them run; the guide must have at
// least one.
func (g *Guide) Step(section string, n int) ([]Block, error) {
	var out []Block
	for i, b := range g.Blocks {
		if b.Section == section && b.Step == n {
			out = append(out, b)
			g.ran[i] = true
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s has no shell block in step %d of %q", g.Path, n, section)
	}
	return out, nil
}

// NotRun lists the blocks no Step call returned.
func (g *Guide) NotRun() []Block {
	var out []Block
	for i, b := range g.Blocks {
		if !g.ran[i] {
			out = append(out, b)
		}
	}
	return out
}
