package helm

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	ri "helm.sh/helm/v4/pkg/release"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// RecordSignatureLabel holds the operator's signature of a release record: an
// HMAC-SHA256, keyed by the operator's record key, over what the record is
// for (see recordBinding) and its content (see canonicalRecord). Helm's
// Secrets driver stores a release's labels as the Secret's labels, outside
// the signed data, and returns them on read.
const RecordSignatureLabel = "kraan.io/record-signature"

// RecordOwnerLabel names the UID of the object (HelmRelease, chart-backed
// object) a record was signed for. It is part of what the signature covers:
// changing it breaks the signature, and a record signed for another object
// — one deleted and made anew, or a tenant's own — is never replayed for
// this one.
const RecordOwnerLabel = "kraan.io/record-owner"

// recordTrustLabel is the engine's verdict on a record it read (see
// RecordTrust). It lives only in memory: the signing driver removes it before
// a record is written.
const recordTrustLabel = "kraan.io/record-trust"

// recordKeyLabel is, in memory only, the name of the Secret a record was
// read from (storedRecords sets it; the signing driver removes it before a
// write). Helm finds a release's records by their labels, not their names,
// so a record's content says which release it is of, and the Secret's
// name where it was put: a record moved under another name is told by them
// differing.
const recordKeyLabel = "kraan.io/record-key"

// recordWriterLabel and recordWrittenAtLabel are, in memory only, who last
// wrote the Secret a record was read from and when, as the Secret's managed
// fields say (storedRecords sets them; the signing driver removes them before
// a write): Helm records no author, and a revision written outside the
// operator is reported with them.
const (
	recordWriterLabel    = "kraan.io/record-writer"
	recordWrittenAtLabel = "kraan.io/record-written-at"
)

// inMemoryLabels never reach storage: the signing driver removes them from a
// record before writing it (Helm copies the previous revision's labels into
// a new one).
var inMemoryLabels = []string{recordTrustLabel, recordKeyLabel, recordWriterLabel, recordWrittenAtLabel}

// A signature label is "2.<key id>.<mac>": the scheme, keyIDLength hex
// digits naming the key (a digest of it, not the key), then macLength hex
// digits of the HMAC (208 bits), 63 characters, a label value's limit. The
// key id tells a record signed with another key (the key Secret was deleted
// and made anew, or rotated) from a tampered one. Operators before the
// binding wrote "<key id>.<mac>" (scheme 1, over the storage namespace and
// the content only); such a record is checked for where it is stored and
// signed again with scheme 2 in place the first time it is read.
const (
	keyIDLength   = 8
	macLength     = 52
	schemeBinding = "2"
)

// RecordTrust is how far the engine trusts a release record it read.
type RecordTrust string

// The verdicts on a record.
const (
	// RecordVerified: the operator's key verifies the record's signature
	// for this release, this storage key and this owner, so the operator
	// wrote it as it is, for the object now reconciling it.
	RecordVerified RecordTrust = "verified"
	// RecordUnverified: the record has no signature (an earlier operator
	// version, Flux helm-controller or the helm CLI wrote it), one made
	// with another key than the operator's current one, or a genuine one
	// made for another release, storage key or owner (copied, renamed,
	// renumbered, or left by an object since deleted). It is never a source
	// of hooks nor a rollback target, and the next revision the operator
	// writes is signed.
	RecordUnverified RecordTrust = "unverified"
	// RecordTampered: the record carries a signature the key does not
	// verify: another Helm client wrote it (an admin's helm upgrade or
	// rollback, Flux helm-controller: both copy the previous revision's
	// labels, the operator's signature too, into the one they write) or
	// someone edited it. Nothing is replayed from it, it is never taken for
	// the desired state, and the release is brought back to its spec with a
	// revision of the operator's own, or adopted when it deploys exactly
	// what the operator would (see WrittenOutside).
	RecordTampered RecordTrust = "tampered"
)

// recordBinding is what a signature binds a record to besides its content:
// the namespace storing it, the release it is of, and the object owning
// that release. The revision and the storage key are the content's (see
// claimedKey).
type recordBinding struct {
	storageNamespace string
	// release is the release the records are read for; "" checks none
	// (tests of the signature alone).
	release string
	// owner is the UID of the object reconciling the release; "" when the
	// engine acts for no object (warm-up, tests of the engine alone).
	owner types.UID
}

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

// SignRecord puts the signature of rel, stored in storageNamespace for the
// object of UID owner, on rel's labels, as the operator does when it writes
// a record. Tests that edit a record to simulate an interrupted action
// re-sign it with it (the owner is the record's RecordOwnerLabel).
func SignRecord(key []byte, storageNamespace string, owner types.UID, rel *release.Release) error {
	canonical, err := canonicalRecord(rel)
	if err != nil {
		return err
	}
	setSignature(rel, signature(key, recordBinding{storageNamespace: storageNamespace, release: rel.Name, owner: owner}, rel, canonical), owner)
	return nil
}

// setSignature labels rel with sig, made for owner.
func setSignature(rel *release.Release, sig string, owner types.UID) {
	if rel.Labels == nil {
		rel.Labels = map[string]string{}
	}
	rel.Labels[RecordSignatureLabel] = sig
	rel.Labels[RecordOwnerLabel] = string(owner)
	if owner == "" {
		delete(rel.Labels, RecordOwnerLabel)
	}
}

// claimedKey is the storage key (the Secret's name) of revision rel, as
// Helm's Secrets driver names it: the record's own content says it.
func claimedKey(rel *release.Release) string {
	return fmt.Sprintf("sh.helm.release.v1.%s.v%d", rel.Name, rel.Version)
}

// signature is the scheme 2 label value signing the canonical encoding of
// rel for b: the storage namespace, the storage key, the release name, the
// revision and the owner are each framed, so that none can be moved into
// another.
func signature(key []byte, b recordBinding, rel *release.Release, canonical []byte) string {
	mac := hmac.New(sha256.New, key)
	for _, field := range []string{"kraan.io/release-record/v2", b.storageNamespace, "secret", claimedKey(rel), rel.Name,
		strconv.Itoa(rel.Version), string(b.owner)} {
		fmt.Fprintf(mac, "%d:%s\x00", len(field), field)
	}
	mac.Write(canonical)
	return schemeBinding + "." + keyID(key) + "." + hex.EncodeToString(mac.Sum(nil))[:macLength]
}

// legacySignature is the scheme 1 label value: the storage namespace and the
// content only, which an earlier operator wrote. It is verified to migrate
// such records, never written.
func legacySignature(key []byte, storageNamespace string, canonical []byte) string {
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

// verification is the verdict on a record, and, for a record an earlier
// operator signed with scheme 1 that verifies for this release, the scheme
// 2 signature to put on it in place (migrate).
type verification struct {
	trust   RecordTrust
	migrate string
}

// verifyRecord classifies rel, just read from storage for b, by its
// signature. stored, when known, is the record's JSON as stored: a record
// the operator signed under Helm 3 is verified against it, since Helm 4
// re-encodes it differently. A genuine signature makes the record verified
// only where it was signed for: under the Secret name its content gives
// (recordKeyLabel, when the record was read from a Secret), for the release
// b reads and, with scheme 2, for b's owner.
func verifyRecord(key []byte, b recordBinding, rel *release.Release, stored []byte) verification {
	sig := rel.Labels[RecordSignatureLabel]
	if sig == "" {
		return verification{trust: RecordUnverified}
	}
	scheme, rest := "1", sig
	if s, r, ok := strings.Cut(sig, "."); ok && s == schemeBinding {
		scheme, rest = s, r
	}
	if id, _, _ := strings.Cut(rest, "."); id != keyID(key) {
		// Signed with a key the operator no longer has: as safe to treat
		// as unsigned, since an unverified record is never replayed either.
		// Forging another key id gains a tenant nothing.
		return verification{trust: RecordUnverified}
	}
	// rel was just decoded from storage: encoding it once gives the bytes
	// signing gave after its own decode (canonicalRecord).
	var canonicals [][]byte
	if canonical, err := json.Marshal(rel); err == nil {
		canonicals = append(canonicals, canonical)
	}
	if stored != nil {
		canonicals = append(canonicals, stored)
	}
	claimed := recordBinding{storageNamespace: b.storageNamespace, release: rel.Name, owner: types.UID(rel.Labels[RecordOwnerLabel])}
	for _, canonical := range canonicals {
		if v, genuine := verifySignature(key, b, claimed, rel, scheme, sig, canonical); genuine {
			return v
		}
	}
	return verification{trust: RecordTampered}
}

// verifySignature checks sig of scheme against rel encoded as canonical:
// genuine says it was made by the key; the verdict then says whether rel is
// verified where b reads it.
func verifySignature(key []byte, b, claimed recordBinding, rel *release.Release, scheme, sig string, canonical []byte) (verification, bool) {
	switch {
	case scheme == schemeBinding && hmac.Equal([]byte(sig), []byte(signature(key, claimed, rel, canonical))):
		// Genuine, and made for what it claims: verified only where that
		// is here.
		if !storedWhereSigned(b, rel) || (b.owner != "" && claimed.owner != b.owner) {
			return verification{trust: RecordUnverified}, true
		}
		return verification{trust: RecordVerified}, true
	case scheme != schemeBinding && hmac.Equal([]byte(sig), []byte(legacySignature(key, b.storageNamespace, canonical))):
		if !storedWhereSigned(b, rel) {
			return verification{trust: RecordUnverified}, true
		}
		// Scheme 1 bound no owner: the first object to read the record for
		// its own release takes it, as the release's records were its own
		// before the upgrade.
		return verification{trust: RecordVerified, migrate: signature(key, b, rel, canonical)}, true
	}
	return verification{}, false
}

// storedWhereSigned says whether rel is stored under the key its content
// names and is of the release b reads: a genuine record copied under
// another Secret name, or labelled for another release, is not.
func storedWhereSigned(b recordBinding, rel *release.Release) bool {
	if b.release != "" && rel.Name != b.release {
		return false
	}
	if k := rel.Labels[recordKeyLabel]; k != "" && k != claimedKey(rel) {
		return false
	}
	return true
}

// signingDriver is Helm's storage driver with the operator's signatures:
// every record it creates is signed; a record it updates is signed again
// only when it was read verified (a status update must not launder an
// unverified or tampered record); every record it reads is classified
// (recordTrust), and the engine replays only verified ones (replayable).
type signingDriver struct {
	driver.Driver
	key     []byte
	binding recordBinding
	// stored holds the JSON of the records as read, for those signed
	// under Helm 3 (see storedRecords), and the Secrets client a record
	// signed with scheme 1 is migrated through; nil verifies re-encoded
	// records only, and migrates in memory.
	stored *storedRecords
	// maxBytes bounds a new record (checkRecordSize).
	maxBytes int64
	// original is the chart a literal chart stands for (the engine's
	// originalChart): a record keeps the chart as it came, not its
	// rendering.
	original func(*chart.Chart) *chart.Chart
}

// keepOriginal puts back in rel the chart its literal one stands for.
func (d *signingDriver) keepOriginal(rel *release.Release) {
	if d.original != nil {
		rel.Chart = d.original(rel.Chart)
	}
}

// Get reads and classifies one record.
func (d *signingDriver) Get(key string) (ri.Releaser, error) {
	rel, err := d.Driver.Get(key)
	if err != nil {
		return nil, err
	}
	if len(d.ofThisRelease([]ri.Releaser{rel})) == 0 {
		return nil, driver.ErrReleaseNotFound
	}
	return rel, nil
}

// List reads and classifies the records filter keeps.
func (d *signingDriver) List(filter func(ri.Releaser) bool) ([]ri.Releaser, error) {
	rels, err := d.Driver.List(filter)
	return d.ofThisRelease(rels), err
}

// Query reads and classifies the records labels select.
func (d *signingDriver) Query(labels map[string]string) ([]ri.Releaser, error) {
	rels, err := d.Driver.Query(labels)
	rels = d.ofThisRelease(rels)
	if err == nil && len(rels) == 0 {
		// Helm reads "no records" as this error, not as an empty list.
		err = driver.ErrReleaseNotFound
	}
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
	for _, l := range inMemoryLabels {
		delete(rel.Labels, l)
	}
	d.keepOriginal(rel)
	if err := checkRecordSize(rel, d.maxBytes); err != nil {
		return err
	}
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
	d.keepOriginal(rel)
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

// ofThisRelease classifies rels and keeps those that are records of the
// release d reads, stored under the key their content names. A record copied
// under another release's name or another revision's key is not part of this
// release's history at all: were Helm to see it, an uninstall or upgrade
// would write its status back under the key its content names (the other
// release's) and act on its manifest. It stays where it is, ignored.
func (d *signingDriver) ofThisRelease(rels []ri.Releaser) []ri.Releaser {
	kept := rels[:0]
	for _, r := range rels {
		d.classify(r)
		if rel, err := v1Release(r); err == nil && rel != nil && !storedWhereSigned(d.binding, rel) {
			continue
		}
		kept = append(kept, r)
	}
	return kept
}

// classify records the verdict on r in its in-memory labels. A record of
// another kind than version 1 gets none, and is never replayed. A record an
// earlier operator signed with scheme 1 that verifies for this release is
// signed again with scheme 2 in place.
func (d *signingDriver) classify(r ri.Releaser) {
	rel, err := v1Release(r)
	if err != nil || rel == nil {
		return
	}
	if rel.Labels == nil {
		rel.Labels = map[string]string{}
	}
	storageKey := rel.Labels[recordKeyLabel]
	if storageKey == "" {
		storageKey = claimedKey(rel)
	}
	v := verifyRecord(d.key, d.binding, rel, d.stored.stored(storageKey))
	rel.Labels[recordTrustLabel] = string(v.trust)
	if v.migrate != "" {
		d.migrate(rel, storageKey, v.migrate)
	}
}

// migrateTimeout bounds the write of one migrated signature: a read that
// cannot write it goes on, verified, and the next read tries again.
const migrateTimeout = 10 * time.Second

// migrate replaces the scheme 1 signature of rel, stored under storageKey,
// with sig, in storage and in memory: only the Secret's two labels change,
// the record's stored bytes (and Helm's encoding of them) stay.
func (d *signingDriver) migrate(rel *release.Release, storageKey, sig string) {
	setSignature(rel, sig, d.binding.owner)
	if d.stored == nil {
		return
	}
	owner := any(string(d.binding.owner))
	if d.binding.owner == "" {
		owner = nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{
		RecordSignatureLabel: sig, RecordOwnerLabel: owner}}})
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), migrateTimeout)
	defer cancel()
	_, _ = d.stored.Patch(ctx, storageKey, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
}

// sign labels rel with its signature when it is trusted. An unverified
// record is written without one, a tampered one with the signature it had,
// which still does not verify. The in-memory labels (the verdict, the key it
// was read from) never reach the Secret; the verdict stays with the release
// for the rest of the action.
func (d *signingDriver) sign(rel *release.Release) error {
	trust := recordTrust(rel)
	for _, l := range inMemoryLabels {
		delete(rel.Labels, l)
	}
	if trust == RecordVerified {
		return SignRecord(d.key, d.binding.storageNamespace, d.binding.owner, rel)
	}
	defer func() { rel.Labels[recordTrustLabel] = string(trust) }()
	if trust == RecordUnverified {
		delete(rel.Labels, RecordSignatureLabel)
		delete(rel.Labels, RecordOwnerLabel)
	}
	return nil
}

// WrittenOutside is rel when it is a revision written outside the operator:
// it carries the operator's signature label, which does not verify — an
// admin's helm upgrade or rollback, or Flux helm-controller, copied it from
// the revision before, or someone edited the record. nil otherwise: a record
// with no signature at all is an earlier operator version's or a first
// migration's, handled as unverified without a report.
func WrittenOutside(rel *release.Release) *release.Release {
	if rel != nil && recordTrust(rel) == RecordTampered {
		return rel
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
	return fmt.Errorf("%s revision %d (Secret %s): %w", what, rel.Version, claimedKey(rel), errUnverifiedRecord)
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
func (e *Engine) recordStorage(secrets corev1client.SecretInterface, target Target, log slog.Handler) *storage.Storage {
	if len(e.recordKey) == 0 {
		d := driver.NewSecrets(secrets)
		d.SetLogger(log)
		return storage.Init(d)
	}
	stored := newStoredRecords(secrets)
	d := driver.NewSecrets(stored)
	d.SetLogger(log)
	binding := recordBinding{storageNamespace: target.StorageNamespace, release: target.ReleaseName, owner: target.Owner}
	return storage.Init(&signingDriver{Driver: d, key: e.recordKey, binding: binding, stored: stored, maxBytes: e.recordLimit(),
		original: e.originalChart})
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
