package helm

import (
	"context"
	"log/slog"
	"strings"
	"sync"

	"github.com/go-logr/logr"

	"github.com/kraan-io/kraan-operator/internal/redact"
)

// logTailLines is how many of Helm's last log lines a step keeps.
const logTailLines = 10

// logTail keeps the last lines Helm logged during an action: on a failed
// wait they name the object that was not ready and why.
type logTail struct {
	mu  sync.Mutex
	buf []string
	// redactor masks secret values in each line; nil masks nothing.
	redactor *redact.Redactor
}

func (l *logTail) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, strings.TrimSpace(line))
	if len(l.buf) > logTailLines {
		l.buf = l.buf[len(l.buf)-logTailLines:]
	}
}

func (l *logTail) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.buf...)
}

// handler is the slog.Handler Helm's actions, kube client and storage log
// through: each record becomes one line, redacted, kept in the tail and
// written to log at debug level (V(1)). Helm logs every level it has; all of
// them go to the tail, which is what a failed step reports.
func (l *logTail) handler(log logr.Logger) slog.Handler {
	return &helmLogHandler{tail: l, log: log}
}

// helmLogHandler formats Helm's records as "message key=value …" lines.
type helmLogHandler struct {
	tail *logTail
	log  logr.Logger
	// attrs are the attributes of WithAttrs, already formatted, each with
	// the groups open when they were added.
	attrs string
	// group is the prefix of the attributes added from now on ("g1.g2.").
	group string
}

// Enabled implements slog.Handler: every record counts, for the tail.
func (h *helmLogHandler) Enabled(context.Context, slog.Level) bool { return true }

// Handle implements slog.Handler.
func (h *helmLogHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	b.WriteString(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		writeAttr(&b, h.group, a)
		return true
	})
	line := h.tail.redactor.String(b.String())
	h.log.V(1).Info(line)
	h.tail.add(line)
	return nil
}

// WithAttrs implements slog.Handler.
func (h *helmLogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(h.attrs)
	for _, a := range attrs {
		writeAttr(&b, h.group, a)
	}
	next := *h
	next.attrs = b.String()
	return &next
}

// WithGroup implements slog.Handler.
func (h *helmLogHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	next := *h
	next.group = h.group + name + "."
	return &next
}

// writeAttr appends " group.key=value"; a group attribute's members are
// written one by one under its name.
func writeAttr(b *strings.Builder, group string, a slog.Attr) {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		prefix := group
		if a.Key != "" {
			prefix += a.Key + "."
		}
		for _, member := range v.Group() {
			writeAttr(b, prefix, member)
		}
		return
	}
	if a.Key == "" {
		return
	}
	b.WriteString(" ")
	b.WriteString(group)
	b.WriteString(a.Key)
	b.WriteString("=")
	b.WriteString(v.String())
}
