package hub

import (
	"errors"
	"fmt"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrOffline reports a reference that is not cached while network access is off
	// (HF_HUB_OFFLINE=1).
	ErrOffline = errors.New("offline mode is on and the model is not in the cache")
	// ErrGated reports a gated or private repository that the token (if any) may not read.
	ErrGated = errors.New("gated or private repository")
	// ErrNotFound reports a repository, revision or file the Hub does not have.
	ErrNotFound = errors.New("not found on the Hub")
	// ErrNoSafetensors reports a repository without safetensors weights.
	ErrNoSafetensors = errors.New("no safetensors weights")
	// ErrChecksum reports downloaded bytes that do not match the Hub's hash.
	ErrChecksum = errors.New("checksum mismatch")
)

// HTTPError is a response from the Hub that the client could not use.
type HTTPError struct {
	URL     string
	Status  int
	Code    string // X-Error-Code, e.g. RepoNotFound, RevisionNotFound, EntryNotFound, GatedRepo
	Message string // X-Error-Message or a hint of what to do
	Err     error  // ErrGated, ErrNotFound or nil
}

func (e *HTTPError) Error() string {
	s := fmt.Sprintf("%s: HTTP %d", e.URL, e.Status)
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

func (e *HTTPError) Unwrap() error { return e.Err }

// ChecksumError reports a downloaded file whose hash or size is not the Hub's. The partial
// blob has been deleted.
type ChecksumError struct {
	File      string
	Want, Got string
	Algorithm string // "sha256", "git-sha1" or "size"
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("%s: %s mismatch (Hub says %s, downloaded %s); the downloaded blob was deleted: run the command again", e.File, e.Algorithm, e.Want, e.Got)
}

func (e *ChecksumError) Unwrap() error { return ErrChecksum }
