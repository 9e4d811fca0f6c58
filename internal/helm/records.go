package helm

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	ri "helm.sh/helm/v4/pkg/release"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// RecordSignatureLabel holds the operator's signature of a release record: an
// HMAC-SHA256, keyed by the operator's record key, over the storage namespace
// and the record's content (see recordDigest). Helm's Secrets driver stores a
// release's labels as the Secret's labels, outside the signed data, and
// returns them on read.
const RecordSignatureLabel = "kraan.io/record-signature"

// recordTrustLabel is the engine's verdict on a record it read (see
// RecordTrust). It lives only in memory: the signing driver removes it before
// a record is written.
const recordTrustLabel = "kraan.io/record-trust"

// A signature label is "<key id>.<mac>": keyIDLength hex digits naming the
// key (a digest of it, not the key), then macLength hex digits of the HMAC
// (208 bits), 61 characters within the 63 of a label value. The key id tells
// a record signed with another key (the key Secret was deleted and made
// anew, or rotated) from a tampered one.
const (
	keyIDLength = 8
	macLength   = 52
)

// RecordTrust is how far the engine trusts a release record it read.
type RecordTrust string

// The verdicts on a record.
const (
	// RecordVerified: the operator's key verifies the record's signature,
	// so the operator wrote it as it is.
	RecordVerified RecordTrust = "verified"
	// RecordUnverified: the record has no signature (an earlier operator
	// version, Flux helm-controller or the helm CLI wrote it) or one made
	// with another key than the operator's current one. It is never a
	// source of hooks nor a rollback target, and the next revision the
	// operator writes is signed.
	RecordUnverified RecordTrust = "unverified"
	// RecordTampered: the record carries a signature the key does not
	// verify: it was changed outside the operator. Nothing is replayed from
	// it and the release is stalled until a person looks at it.
	RecordTampered RecordTrust = "tampered"
)

// recordTrust is the verdict the signing driver recorded on rel when it read
// it; a release no driver read (made in memory by an action) is the
// operator's own.
func recordTrust(rel *release.Release) RecordTrust {
	if rel == nil {
		return RecordVerified
	}
	if t := RecordTrust(rel.Labels[recordTrustLabel]); t != "" {
		return t
	}
	return RecordVerified
}

// replayable says whether rel may be replayed with the operator's
// identity: its hooks run, rolled back to, its objects re-created.
func replayable(rel *release.Release) bool { return recordTrust(rel) == RecordVerified }

// SignRecord puts the signature of rel, stored in storageNamespace, on rel's
// labels, as the operator does when it writes a record. Tests that edit a
// record to simulate an interrupted action re-sign it with it.
func SignRecord(key []byte, storageNamespace string, rel *release.Release) error {
	sig, err := recordSignature(key, storageNamespace, rel)
	if err != nil {
		return err
	}
	if rel.Labels == nil {
		rel.Labels = map[string]string{}
	}
	rel.Labels[RecordSignatureLabel] = sig
	return nil
}

// recordSignature is the label value signing rel.
func recordSignature(key []byte, storageNamespace string, rel *release.Release) (string, error) {
	canonical, err := canonicalRecord(rel)
	if err != nil {
		return "", err
	}
	return signature(key, storageNamespace, canonical), nil
}

// signature is the label value signing the canonical encoding of a record.
func signature(key []byte, storageNamespace string, canonical []byte) string {
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "kraan.io/release-record/v1\x00%s\x00", storageNamespace)
	mac.Write(canonical)
	return keyID(key) + "." + hex.EncodeToString(mac.Sum(nil))[:macLength]
}

// keyID names key in a signature without revealing it.
func keyID(key []byte) string {
	sum := sha256.Sum256(append([]byte("kraan.io/record-key-id\x00"), key...))
	return hex.EncodeToString(sum[:])[:keyIDLength]
}

// canonicalRecord is rel as the Secrets driver stores it (JSON: name,
// namespace, version, status, manifest, hooks, values, chart), encoded after
// a decode so that what a later read re-encodes is byte for byte the same.
// Labels are not part of it: they are not in the stored data.
func canonicalRecord(rel *release.Release) ([]byte, error) {
	data, err := json.Marshal(rel)
	if err != nil {
		return nil, fmt.Errorf("encoding release %s revision %d: %w", rel.Name, rel.Version, err)
	}
	decoded := &release.Release{}
	if err := json.Unmarshal(data, decoded); err != nil {
		return nil, fmt.Errorf("decoding release %s revision %d: %w", rel.Name, rel.Version, err)
	}
	return json.Marshal(decoded)
}

// verifyRecord classifies rel, stored in storageNamespace and just read
// from storage, by its signature. stored, when known, is the record's JSON
// as stored: a record the operator signed under Helm 3 is verified against
// it, since Helm 4 re-encodes it differently.
func verifyRecord(key []byte, storageNamespace string, rel *release.Release, stored []byte) RecordTrust {
	sig := rel.Labels[RecordSignatureLabel]
	if sig == "" {
		return RecordUnverified
	}
	if id, _, _ := strings.Cut(sig, "."); id != keyID(key) {
		// Signed with a key the operator no longer has: as safe to treat
		// as unsigned, since an unverified record is never replayed either.
		// Forging another key id gains a tenant nothing.
		return RecordUnverified
	}
	// rel was just decoded from storage: encoding it once gives the bytes
	// signing gave after its own decode (canonicalRecord).
	canonical, err := json.Marshal(rel)
	if err == nil && hmac.Equal([]byte(sig), []byte(signature(key, storageNamespace, canonical))) {
		return RecordVerified
	}
	if stored != nil && hmac.Equal([]byte(sig), []byte(signature(key, storageNamespace, stored))) {
		return RecordVerified
	}
	return RecordTampered
}

// signingDriver is Helm's storage driver with the operator's signatures:
// every record it creates is signed; a record it updates is signed again
// only when it was read verified (a status update must not launder an
// unverified or tampered record); every record it reads is classified
// (recordTrust), and the engine replays only verified ones (replayable).
type signingDriver struct {
	driver.Driver
	key       []byte
	namespace string
	// stored holds the JSON of the records as read, for those signed
	// under Helm 3 (see storedRecords); nil verifies re-encoded records only.
	stored *storedRecords
}

// Get reads and classifies one record.
func (d *signingDriver) Get(key string) (ri.Releaser, error) {
	rel, err := d.Driver.Get(key)
	if err != nil {
		return nil, err
	}
	d.classify(rel)
	return rel, nil
}

// List reads and classifies the records filter keeps.
func (d *signingDriver) List(filter func(ri.Releaser) bool) ([]ri.Releaser, error) {
	rels, err := d.Driver.List(filter)
	d.classifyAll(rels)
	return rels, err
}

// Query reads and classifies the records labels select.
func (d *signingDriver) Query(labels map[string]string) ([]ri.Releaser, error) {
	rels, err := d.Driver.Query(labels)
	d.classifyAll(rels)
	return rels, err
}

// Create writes a new record, signed: the engine makes a new revision from
// a chart it rendered itself, or rolls back to a verified one. Helm copies
// the previous revision's labels into the new one, the verdict on it too,
// which does not apply.
func (d *signingDriver) Create(key string, r ri.Releaser) error {
	rel, err := v1Release(r)
	if err != nil || rel == nil {
		return fmt.Errorf("signing release record %s: %w", key, errors.Join(err, errNoRecord))
	}
	delete(rel.Labels, recordTrustLabel)
	if err := d.sign(rel); err != nil {
		return err
	}
	return d.Driver.Create(key, rel)
}

// Update rewrites a record: signed again when it was trusted.
func (d *signingDriver) Update(key string, r ri.Releaser) error {
	rel, err := v1Release(r)
	if err != nil || rel == nil {
		return fmt.Errorf("signing release record %s: %w", key, errors.Join(err, errNoRecord))
	}
	if err := d.sign(rel); err != nil {
		return err
	}
	return d.Driver.Update(key, rel)
}

// errNoRecord: the driver was handed nothing to write.
var errNoRecord = errors.New("no version 1 release record")

// Delete removes a record; what it returns is classified like any read.
func (d *signingDriver) Delete(key string) (ri.Releaser, error) {
	rel, err := d.Driver.Delete(key)
	if rel != nil {
		d.classify(rel)
	}
	return rel, err
}

func (d *signingDriver) classifyAll(rels []ri.Releaser) {
	for _, rel := range rels {
		d.classify(rel)
	}
}

// classify records the verdict on r in its in-memory labels. A record of
// another kind than version 1 gets none, and is never replayed.
func (d *signingDriver) classify(r ri.Releaser) {
	rel, err := v1Release(r)
	if err != nil || rel == nil {
		return
	}
	if rel.Labels == nil {
		rel.Labels = map[string]string{}
	}
	rel.Labels[recordTrustLabel] = string(verifyRecord(d.key, d.namespace, rel, d.stored.stored(recordSecretName(rel))))
}

// sign labels rel with its signature when it is trusted. An unverified
// record is written without one, a tampered one with the signature it had,
// which still does not verify. The in-memory verdict never reaches the
// Secret, and stays with the release for the rest of the action.
func (d *signingDriver) sign(rel *release.Release) error {
	trust := recordTrust(rel)
	if trust == RecordVerified {
		delete(rel.Labels, recordTrustLabel)
		return SignRecord(d.key, d.namespace, rel)
	}
	delete(rel.Labels, recordTrustLabel)
	defer func() { rel.Labels[recordTrustLabel] = string(trust) }()
	if trust == RecordUnverified {
		delete(rel.Labels, RecordSignatureLabel)
	}
	return nil
}

// TamperedRecordError says a release record carries a signature the
// operator's key does not verify: someone changed it outside the operator.
// The release is not acted on until a person looks at it; deleting its object
// still uninstalls it, without hooks and only what the release owns.
type TamperedRecordError struct {
	// Secret is the record's Secret, sh.helm.release.v1.<release>.v<version>.
	Secret string
	// Namespace is the storage namespace holding it.
	Namespace string
}

func (e *TamperedRecordError) Error() string {
	return fmt.Sprintf("release record Secret %s/%s was changed outside the operator (its signature does not verify): "+
		"nothing is replayed from it; delete the object to uninstall what the release owns, or restore the record",
		e.Namespace, e.Secret)
}

// recordSecretName is the Secret Helm stores revision rel in.
func recordSecretName(rel *release.Release) string {
	return fmt.Sprintf("sh.helm.release.v1.%s.v%d", rel.Name, rel.Version)
}

// checkTampered returns a TamperedRecordError for the first tampered record
// among the ones an action would replay.
func checkTampered(storageNamespace string, rels ...*release.Release) error {
	for _, rel := range rels {
		if rel != nil && recordTrust(rel) == RecordTampered {
			return &TamperedRecordError{Secret: recordSecretName(rel), Namespace: storageNamespace}
		}
	}
	return nil
}

// errUnverifiedRecord: the record an action would replay is not signed by
// the operator.
var errUnverifiedRecord = errors.New("the release record is not signed by this operator (written by an earlier version, " +
	"Flux or the helm CLI), so it is not replayed")

// refuseUnverified fails an action that replays rel (a rollback to it, its
// test hooks) when rel is not the operator's verified record.
func refuseUnverified(rel *release.Release, what string) error {
	if rel == nil || replayable(rel) {
		return nil
	}
	return fmt.Errorf("%s revision %d (Secret %s): %w", what, rel.Version, recordSecretName(rel), errUnverifiedRecord)
}

// SignRecordsWith makes the engine sign every release record it writes with
// key and verify every record it reads. Without a key (tests of the engine
// alone) records are neither signed nor verified; the operator always sets
// one (see internal/operator).
func (e *Engine) SignRecordsWith(key []byte) {
	e.recordKey = key
}

// recordStorage is release storage in secrets of storageNamespace, through
// the signing driver of the engine's key when it has one.
func (e *Engine) recordStorage(secrets corev1client.SecretInterface, storageNamespace string, log slog.Handler) *storage.Storage {
	if len(e.recordKey) == 0 {
		d := driver.NewSecrets(secrets)
		d.SetLogger(log)
		return storage.Init(d)
	}
	stored := newStoredRecords(secrets)
	d := driver.NewSecrets(stored)
	d.SetLogger(log)
	return storage.Init(&signingDriver{Driver: d, key: e.recordKey, namespace: storageNamespace, stored: stored})
}

// hooksOfLatestReplayable says whether the hooks of the newest record of a
// release may run, e.g. on uninstall: only when the operator wrote it.
func hooksOfLatestReplayable(cfg *action.Configuration, name string) bool {
	last, err := cfg.Releases.Last(name)
	if err != nil {
		// Nothing readable to replay; Helm's own read reports the error.
		return true
	}
	rel, err := v1Release(last)
	if err != nil || rel == nil {
		return false
	}
	return replayable(rel)
}
