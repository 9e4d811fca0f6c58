package imagebuild

import (
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"time"
)

// SPDX 2.3 JSON, the subset an SBOM of a Go binary needs: one package per
// module linked into the binary, which the main module DEPENDS_ON, and the Go
// standard library.
type spdxDocument struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      spdxCreationInfo   `json:"creationInfo"`
	Packages          []spdxPackage      `json:"packages"`
	Relationships     []spdxRelationship `json:"relationships"`
}

type spdxCreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPackage struct {
	Name             string            `json:"name"`
	SPDXID           string            `json:"SPDXID"`
	VersionInfo      string            `json:"versionInfo"`
	DownloadLocation string            `json:"downloadLocation"`
	FilesAnalyzed    bool              `json:"filesAnalyzed"`
	ExternalRefs     []spdxExternalRef `json:"externalRefs,omitempty"`
}

type spdxExternalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

type spdxRelationship struct {
	SPDXElementID      string `json:"spdxElementId"`
	RelationshipType   string `json:"relationshipType"`
	RelatedSPDXElement string `json:"relatedSpdxElement"`
}

// SBOM writes an SPDX 2.3 JSON document for the Go binary at binaryPath from
// the build information the Go linker embeds (debug/buildinfo): the exact
// module versions linked in, after replacements, as `go version -m` prints
// them. name says which image and platform it describes; created is the
// build's fixed time, so the document is as reproducible as the image.
func SBOM(binaryPath, name string, m Metadata) ([]byte, error) {
	info, err := buildinfo.ReadFile(binaryPath)
	if err != nil {
		return nil, fmt.Errorf("reading the build information of %s: %w", binaryPath, err)
	}
	main := goPackage("SPDXRef-Package-main", info.Main.Path, moduleVersion(info.Main.Version, m))
	doc := spdxDocument{
		SPDXVersion:       "SPDX-2.3",
		DataLicense:       "CC0-1.0",
		SPDXID:            "SPDXRef-DOCUMENT",
		Name:              name,
		DocumentNamespace: fmt.Sprintf("%s/sbom/%s/%s", m.Source, m.Revision, name),
		CreationInfo: spdxCreationInfo{
			Created:  m.Created.UTC().Format(time.RFC3339),
			Creators: []string{"Tool: kraan-operator-hack-image", "Organization: kraan-io"},
		},
		Packages: []spdxPackage{main, {
			Name: "stdlib", SPDXID: "SPDXRef-Package-stdlib", VersionInfo: info.GoVersion,
			DownloadLocation: "https://go.dev/dl/", ExternalRefs: []spdxExternalRef{purl("stdlib", info.GoVersion)},
		}},
		Relationships: []spdxRelationship{
			{"SPDXRef-DOCUMENT", "DESCRIBES", main.SPDXID},
			{main.SPDXID, "DEPENDS_ON", "SPDXRef-Package-stdlib"},
		},
	}
	for i, dep := range info.Deps {
		if dep.Replace != nil {
			dep = dep.Replace
		}
		p := goPackage(fmt.Sprintf("SPDXRef-Package-%d", i), dep.Path, dep.Version)
		doc.Packages = append(doc.Packages, p)
		doc.Relationships = append(doc.Relationships, spdxRelationship{main.SPDXID, "DEPENDS_ON", p.SPDXID})
	}
	return json.MarshalIndent(doc, "", "  ")
}

// moduleVersion is the main module's version: what the Go command stamped
// (a pseudo-version from the VCS, or "(devel)"), else the operator's version.
func moduleVersion(v string, m Metadata) string {
	if v == "" || v == "(devel)" {
		return "v" + m.Version
	}
	return v
}

func goPackage(id, path, version string) spdxPackage {
	return spdxPackage{
		Name: path, SPDXID: id, VersionInfo: version,
		// The module proxy's URL needs the path case-escaped; the purl names
		// the module exactly, so the location is left unasserted.
		DownloadLocation: "NOASSERTION",
		ExternalRefs:     []spdxExternalRef{purl(path, version)},
	}
}

// purl is the package URL of a Go module (the purl spec's golang type).
func purl(path, version string) spdxExternalRef {
	return spdxExternalRef{"PACKAGE-MANAGER", "purl", "pkg:golang/" + path + "@" + version}
}
