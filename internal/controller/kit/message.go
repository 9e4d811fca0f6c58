package kit

import (
	"fmt"
	"unicode/utf8"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxMessageLength bounds condition and event messages. An error can carry
// a whole rendered manifest or a page of Helm's log; a message of this size
// still names what failed and why, and keeps `kubectl describe` readable.
const MaxMessageLength = 2048

// MaxEventNoteLength is the API server's limit on an event's message (the
// note of an events.k8s.io/v1 Event): a longer event is rejected, and lost.
const MaxEventNoteLength = 1024

// messageTail is how much of the end of a long message is kept: the cause of
// a wrapped error comes last.
const messageTail = 512

// BoundMessage returns msg if it fits in MaxMessageLength bytes, or its
// beginning and end around a note of how much was left out, cut at UTF-8
// character boundaries.
func BoundMessage(msg string) string {
	return boundTo(msg, MaxMessageLength)
}

// BoundEventNote is BoundMessage within MaxEventNoteLength.
func BoundEventNote(msg string) string {
	return boundTo(msg, MaxEventNoteLength)
}

// boundTo bounds msg to limit bytes, keeping its end (messageTail bytes):
// limit must leave room for that and the note of what was left out.
func boundTo(msg string, limit int) string {
	if len(msg) <= limit {
		return msg
	}
	headEnd := limit - messageTail - 64
	for headEnd > 0 && !utf8.RuneStart(msg[headEnd]) {
		headEnd--
	}
	tailStart := len(msg) - messageTail
	for tailStart < len(msg) && !utf8.RuneStart(msg[tailStart]) {
		tailStart++
	}
	return fmt.Sprintf("%s … (%d bytes left out) … %s", msg[:headEnd], tailStart-headEnd, msg[tailStart:])
}

// SetStatusCondition is apimeta.SetStatusCondition with the message bounded;
// every condition the controllers write goes through it.
func SetStatusCondition(conditions *[]metav1.Condition, c metav1.Condition) {
	c.Message = BoundMessage(c.Message)
	apimeta.SetStatusCondition(conditions, c)
}
