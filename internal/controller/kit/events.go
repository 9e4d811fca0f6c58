package kit

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// Events records events about objects; its zero value (no recorder, as in
// unit tests) records nothing. Reasons are the condition reasons, so an event
// and the condition it explains read the same.
type Events struct {
	Recorder events.EventRecorder
}

// Normal records a Normal event.
func (e Events) Normal(obj runtime.Object, reason, message string) {
	e.record(obj, corev1.EventTypeNormal, reason, message)
}

// Warning records a Warning event.
func (e Events) Warning(obj runtime.Object, reason, message string) {
	e.record(obj, corev1.EventTypeWarning, reason, message)
}

func (e Events) record(obj runtime.Object, eventType, reason, message string) {
	if e.Recorder != nil {
		e.Recorder.Eventf(obj, nil, eventType, reason, reason, "%s", BoundEventNote(message))
	}
}
