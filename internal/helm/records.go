package helm

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	release "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/types"
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
