package capabilityruntime

import (
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// NameSplit holds the parts of a logical capability runtime name.
//
// A logical name is a ':'-separated path whose first segment is the registry
// owner and whose remaining segments are the functional path:
//
//	"github:read"                 -> Owner "github", PathSegments ["read"]
//	"neuron-runtime:github:read"  -> Owner "neuron-runtime", PathSegments ["github", "read"]
//	"hashicorp:vault:auth"        -> Owner "hashicorp", PathSegments ["vault", "auth"]
//
// A NameSplit returned by ParseType holds only segments that are safe as one
// directory name each (see ParseType), so ToLocalPath never leaves the
// directory it is joined under.
type NameSplit struct {
	// Owner is the registry owner, e.g. "neuron-runtime".
	Owner string
	// PathSegments is the functional path, at least one segment.
	PathSegments []string
}

// ParseType splits a logical capability runtime name such as
// "neuron-runtime:github:read" into its owner and path segments. At least
// one ':' is required; the first segment is always the owner.
//
// Whitespace around each segment is trimmed, so "github: read" parses as
// "github:read". After trimming, every segment, owner included, must be
// non-empty, must not be "." or "..", and must contain no '/', '\\',
// whitespace, control character or invalid UTF-8. Case is kept: the name is
// a store path on case-sensitive file systems, and lowercasing would merge
// names that the store keeps apart.
//
// Fixed: upstream trims only the owner and accepts "." and "..", path
// separators and blank segments, so "..:..:etc" became the store path
// "../../etc" and "github: read" a directory named " read"; here each is
// refused or trimmed. Refusals are *NameError values wrapping ErrInvalidName.
func ParseType(capabilityRuntimeType string) (*NameSplit, error) {
	parts := strings.Split(capabilityRuntimeType, ":")
	if len(parts) < 2 {
		return nil, &NameError{Name: capabilityRuntimeType, Problem: "must contain at least one ':' separator (owner:name)"}
	}
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
		if problem := segmentProblem(parts[i]); problem != "" {
			if i == 0 {
				return nil, &NameError{Name: capabilityRuntimeType, Problem: "owner segment " + problem}
			}
			return nil, &NameError{Name: capabilityRuntimeType, Problem: "path segment " + strconv.Itoa(i) + " " + problem}
		}
	}
	return &NameSplit{Owner: parts[0], PathSegments: parts[1:]}, nil
}

// segmentProblem says why s cannot be one segment of a store path, or "" when
// it can. The same rule applies to each part of a logical name and to a
// manifest's version, which both become one directory name in the store.
func segmentProblem(s string) string {
	switch s {
	case "":
		return "is empty"
	case ".", "..":
		return "is " + strconv.Quote(s) + ", which names a directory other than itself"
	}
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	for _, r := range s {
		switch {
		case r == '/' || r == '\\':
			return "contains a path separator " + strconv.Quote(string(r))
		case r == ':':
			return "contains ':'"
		case unicode.IsSpace(r):
			return "contains whitespace"
		case unicode.IsControl(r):
			return "contains a control character"
		}
	}
	return ""
}

// String renders the canonical logical name: owner and path segments joined
// with ':'.
func (n *NameSplit) String() string {
	return n.Owner + ":" + strings.Join(n.PathSegments, ":")
}

// ToGitHubRepo returns the "owner/repo" string GitHub's API expects. The path
// segments are joined with '-' because GitHub has no nested repositories:
//
//	"github:read"                 -> "github/read"
//	"neuron-runtime:github:read"  -> "neuron-runtime/github-read"
func (n *NameSplit) ToGitHubRepo() string {
	return n.Owner + "/" + strings.Join(n.PathSegments, "-")
}

// ToLocalPath returns the relative store path of the name: owner and path
// segments as nested directories, with the operating system's separator
// ("hashicorp/vault/auth" on Unix). For a NameSplit from ParseType the path
// stays under whatever root it is joined to.
func (n *NameSplit) ToLocalPath() string {
	return filepath.Join(append([]string{n.Owner}, n.PathSegments...)...)
}

// NormalizeType returns the canonical form of a logical name (ParseType, then
// String): whitespace around segments removed, nothing else changed. Two
// names denote the same capability runtime exactly when their normal forms
// are equal.
func NormalizeType(capabilityRuntimeType string) (string, error) {
	n, err := ParseType(capabilityRuntimeType)
	if err != nil {
		return "", err
	}
	return n.String(), nil
}

// TypePath converts a logical name to its store-relative path, e.g.
// "neuron-runtime:github:read" -> "neuron-runtime/github/read". It returns
// ParseType's error for a name that is not valid.
func TypePath(capabilityRuntimeType string) (string, error) {
	n, err := ParseType(capabilityRuntimeType)
	if err != nil {
		return "", err
	}
	return n.ToLocalPath(), nil
}
