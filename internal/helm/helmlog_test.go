package helm

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/go-logr/logr/testr"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	"github.com/kraan-io/kraan-operator/internal/redact"
)

// testLogHandler is a Helm log handler writing to the test's log.
func testLogHandler(t *testing.T) slog.Handler {
	return (&logTail{}).handler(testr.NewWithOptions(t, testr.Options{Verbosity: 1}))
}

// recordingLogger is a logr logger that keeps each line and its verbosity.
func recordingLogger(lines *[]string) logr.Logger {
	return funcr.New(func(_, args string) { *lines = append(*lines, args) }, funcr.Options{Verbosity: 1, LogInfoLevel: ptr.To("v")})
}

func TestHelmLogHandler_KeepsARedactedTailAndForwardsAtDebugLevel(t *testing.T) {
	g := NewWithT(t)
	var forwarded []string
	redactor := &redact.Redactor{}
	redactor.Add("s3cr3t")
	tail := &logTail{redactor: redactor}
	log := slog.New(tail.handler(recordingLogger(&forwarded)))

	log.With("release", "web").WithGroup("wait").Debug("waiting for resources", "object", "Deployment shop/web", "token", "s3cr3t")
	log.Warn("update failed", slog.Any("error", errors.New("denied: s3cr3t")))

	g.Expect(tail.lines()).To(Equal([]string{
		"waiting for resources release=web wait.object=Deployment shop/web wait.token=*****",
		"update failed error=denied: *****",
	}))
	g.Expect(forwarded).To(HaveLen(2))
	for _, line := range forwarded {
		g.Expect(line).To(ContainSubstring(`"v"=1`), "forwarded at debug level (V(1))")
		g.Expect(line).NotTo(ContainSubstring("s3cr3t"))
	}
	g.Expect(forwarded[0]).To(ContainSubstring("waiting for resources release=web"))
}

func TestHelmLogHandler_KeepsTheLastLinesOnly(t *testing.T) {
	g := NewWithT(t)
	tail := &logTail{}
	log := slog.New(tail.handler(logr.Discard()))
	for i := range logTailLines + 5 {
		log.Info("line", "n", i)
	}
	lines := tail.lines()
	g.Expect(lines).To(HaveLen(logTailLines))
	g.Expect(lines[0]).To(Equal("line n=5"))
	g.Expect(lines[len(lines)-1]).To(Equal("line n=14"))
}

func TestHelmLogHandler_EnabledAtEveryLevel(t *testing.T) {
	h := (&logTail{}).handler(logr.Discard())
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
		if !h.Enabled(context.Background(), level) {
			t.Errorf("level %s disabled: Helm's debug lines name the objects a failed wait waited for", level)
		}
	}
}
