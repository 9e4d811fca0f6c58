package localplane

import (
	"bytes"
	"io"
	"sync"
)

// logsMu serialises writes to Options.Logs: several children write to it
// from their own copying goroutines, and a shared writer such as a test log
// or os.Stderr must not see lines interleaved mid-line.
var logsMu sync.Mutex

// prefixWriter writes complete lines to w, each starting with prefix, so the
// merged output of all components stays readable.
type prefixWriter struct {
	w       io.Writer
	prefix  []byte
	partial []byte // bytes after the last newline, held until the line ends
}

func newPrefixWriter(w io.Writer, prefix string) *prefixWriter {
	return &prefixWriter{w: w, prefix: []byte(prefix)}
}

// Write implements io.Writer. It always reports len(p) so a slow or failing
// extra writer never makes the child's output fail; the log file has it all.
func (pw *prefixWriter) Write(p []byte) (int, error) {
	pw.partial = append(pw.partial, p...)
	var out []byte
	for {
		i := bytes.IndexByte(pw.partial, '\n')
		if i < 0 {
			break
		}
		out = append(out, pw.prefix...)
		out = append(out, pw.partial[:i+1]...)
		pw.partial = pw.partial[i+1:]
	}
	if len(out) > 0 {
		logsMu.Lock()
		_, _ = pw.w.Write(out)
		logsMu.Unlock()
	}
	return len(p), nil
}
