// Package hub finds Hugging Face model folders: in the local Hugging Face cache (the layout
// huggingface_hub writes, shared with transformers, vLLM and others) and, when they are not
// there, on the Hub itself, downloading only what an export needs into that same cache.
//
// It owns the cache layout (models--ORG--NAME/{refs,blobs,snapshots}, with symlinks or, as
// huggingface_hub leaves it on Windows, copies; .locks), the Hub's download protocol
// (revision metadata, resolve URLs, ETag headers, redirects, Range resumption), the bounds
// of a download (declared sizes, free disk space, timeouts, tries), the checks that keep
// its writes inside the cache, and the verification of what arrives (SHA-256 for LFS
// files, the git blob hash for the others).
// It does not read the environment: cmd/hfstatic turns HF_HUB_CACHE, HF_HOME, HF_TOKEN,
// HF_ENDPOINT and HF_HUB_OFFLINE into a Cache and a Client. docs/hub.md lists the headers and
// endpoints relied on, with the Hub documentation they come from.
package hub

import (
	"fmt"
	"regexp"
	"strings"
)

// DefaultRevision is the revision a reference without @REV names.
const DefaultRevision = "main"

// Ref names a model repository on the Hub at a revision (a branch, a tag or a commit hash).
type Ref struct {
	Repo     string // "ORG/NAME"
	Revision string // "main" when not given
}

func (r Ref) String() string {
	if r.Revision == "" || r.Revision == DefaultRevision {
		return r.Repo
	}
	return r.Repo + "@" + r.Revision
}

// Org and name: letters, digits, '-', '_', '.'; no "--" (the cache's separator) and no
// leading or trailing '-' or '.', as the Hub itself requires.
var repoPart = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,94}[A-Za-z0-9_])?$`)

// revisionRE accepts branch and tag names and commit hashes; no "..", no spaces.
var revisionRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$`)

// ParseRef parses ORG/NAME[@REVISION].
func ParseRef(s string) (Ref, error) {
	repo, rev, hasRev := strings.Cut(s, "@")
	org, name, ok := strings.Cut(repo, "/")
	switch {
	case !ok || strings.Contains(name, "/"):
		return Ref{}, fmt.Errorf("hub: %q is not a model reference: want ORG/NAME[@REVISION]", s)
	case !repoPart.MatchString(org) || !repoPart.MatchString(name) ||
		strings.Contains(org, "--") || strings.Contains(name, "--") ||
		strings.Contains(org, "..") || strings.Contains(name, ".."):
		return Ref{}, fmt.Errorf("hub: %q is not a valid repository id (letters, digits, '-', '_', '.'; no \"--\" or \"..\")", repo)
	}
	if !hasRev {
		rev = DefaultRevision
	} else if !revisionRE.MatchString(rev) || strings.Contains(rev, "..") {
		return Ref{}, fmt.Errorf("hub: %q is not a valid revision", rev)
	}
	return Ref{Repo: repo, Revision: rev}, nil
}

// LooksLikeRef reports whether s has the form of ORG/NAME[@REV]. A caller checks for a local
// folder of that name first.
func LooksLikeRef(s string) bool {
	_, err := ParseRef(s)
	return err == nil
}

// commitRE matches a full git commit hash.
var commitRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

// IsCommit reports whether rev is a full commit hash.
func IsCommit(rev string) bool { return commitRE.MatchString(rev) }
