package plugin

import (
	"fmt"
	"io"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// tone is the colour of a status: ready, failed or in between.
type tone int

const (
	toneNone tone = iota
	toneGood
	toneBad
	toneBusy
)

// ansi are the terminal colours of the tones.
var ansi = map[tone]string{toneGood: "\x1b[32m", toneBad: "\x1b[31m", toneBusy: "\x1b[33m"}

// cell is one table cell; only status cells have a tone.
type cell struct {
	text string
	tone tone
}

// table prints rows aligned in columns, as kubectl get does; colours do not
// count towards a column's width. The last column is not padded.
type table struct {
	header []string
	rows   [][]cell
	color  bool
}

func (t *table) add(cells ...cell) { t.rows = append(t.rows, cells) }

func (t *table) widths() []int {
	w := make([]int, len(t.header))
	for i, h := range t.header {
		w[i] = len(h)
	}
	for _, r := range t.rows {
		for i, c := range r {
			w[i] = max(w[i], len([]rune(c.text)))
		}
	}
	return w
}

func (t *table) write(out io.Writer, header bool) {
	w := t.widths()
	if header {
		plain := make([]cell, len(t.header))
		for i, h := range t.header {
			plain[i] = cell{text: h}
		}
		t.line(out, plain, w)
	}
	for _, r := range t.rows {
		t.line(out, r, w)
	}
}

func (t *table) line(out io.Writer, r []cell, w []int) {
	var b strings.Builder
	for i, c := range r {
		text := c.text
		if i < len(r)-1 {
			text += strings.Repeat(" ", w[i]-len([]rune(c.text))+3)
		}
		if t.color && c.tone != toneNone {
			text = ansi[c.tone] + c.text + "\x1b[0m" + text[len(c.text):]
		}
		b.WriteString(text)
	}
	fmt.Fprintln(out, strings.TrimRight(b.String(), " "))
}

// age is kubectl's short age of t, "<unknown>" for a zero time.
func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// Column names several tables share; the message is the last column of every table.
const (
	messageColumn = "MESSAGE"
	versionColumn = "VERSION"
)

// text is a plain cell.
func text(s string) cell { return cell{text: s} }
