package hub

import (
	"errors"
	"fmt"
	"time"
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
	// ErrOversize reports a server that sent more bytes than the file's declared size.
	ErrOversize = errors.New("more bytes than declared")
	// ErrTimeout reports a connection, a response or a body that took longer than the
	// client's timeouts allow (a *TimeoutError says which).
	ErrTimeout = errors.New("timed out")
	// ErrNoSpace reports a download that does not fit in the free space of the cache's disk.
	ErrNoSpace = errors.New("not enough free disk space")
	// ErrUnsafeCache reports a file or folder in the cache that hfstatic will not write
	// through: a symbolic link, a FIFO or other special file, a hard-linked partial download.
	ErrUnsafeCache = errors.New("unsafe file in the Hugging Face cache")
	// ErrBadMetadata reports revision metadata or headers that contradict themselves
	// (two sizes for one file, a file listed twice with different contents, no size).
	ErrBadMetadata = errors.New("inconsistent metadata from the Hub")
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

// TimeoutError reports a try that took longer than a timeout of the Client.
type TimeoutError struct {
	URL   string
	Phase string        // "connect", "response headers", "body" (no bytes for After) or "request"
	After time.Duration // the timeout that expired
}

func (e *TimeoutError) Error() string {
	switch e.Phase {
	case "connect":
		return fmt.Sprintf("%s: no connection within %v", e.URL, e.After)
	case "response headers":
		return fmt.Sprintf("%s: no response within %v", e.URL, e.After)
	case "body":
		return fmt.Sprintf("%s: the transfer stalled (no bytes for %v)", e.URL, e.After)
	}
	return fmt.Sprintf("%s: the request took longer than %v", e.URL, e.After)
}

func (e *TimeoutError) Unwrap() error { return ErrTimeout }

// SizeError reports a file whose bytes exceed its declared size, or sizes that disagree.
type SizeError struct {
	File     string
	Declared int64 // bytes the metadata and headers declared
	Got      int64 // bytes the server sent or announced (Content-Length) past the resume point
	Err      error // ErrOversize or ErrBadMetadata
}

func (e *SizeError) Error() string {
	if errors.Is(e.Err, ErrOversize) {
		return fmt.Sprintf("%s: the server sent more than the %d bytes the Hub declared (at least %d); stopped there, nothing kept", e.File, e.Declared, e.Got)
	}
	return fmt.Sprintf("%s: the Hub declares %d bytes in its metadata and %d in the file's headers", e.File, e.Declared, e.Got)
}

func (e *SizeError) Unwrap() error { return e.Err }

// SpaceError reports a download that would not fit on the cache's disk.
type SpaceError struct {
	Dir        string
	Need, Free int64 // bytes
}

func (e *SpaceError) Error() string {
	return fmt.Sprintf("%s: the download needs %s more but the disk has %s free; free some space or point HF_HUB_CACHE at a larger disk", e.Dir, byteCount(e.Need), byteCount(e.Free))
}

func (e *SpaceError) Unwrap() error { return ErrNoSpace }

// UnsafeCacheError names a path in the cache hfstatic refused to write through.
type UnsafeCacheError struct {
	Path   string
	Reason string // e.g. "is a symbolic link", "is not a regular file (a named pipe)"
}

func (e *UnsafeCacheError) Error() string {
	return fmt.Sprintf("%s %s; hfstatic writes only regular files in real folders inside the cache: remove it and run again", e.Path, e.Reason)
}

func (e *UnsafeCacheError) Unwrap() error { return ErrUnsafeCache }

// TransferError reports a file whose download failed on every try. What arrived is kept
// in its .incomplete blob, so a later run resumes from there.
type TransferError struct {
	File        string
	Tries       int
	Done, Total int64 // bytes kept, and the file's size
	Err         error // the last try's error
}

func (e *TransferError) Error() string {
	return fmt.Sprintf("%s: download failed after %d tries, %s of %s kept (run again to resume): %v", e.File, e.Tries, byteCount(e.Done), byteCount(e.Total), e.Err)
}

func (e *TransferError) Unwrap() error { return e.Err }

// byteCount formats n bytes for a message: "1,048,576 bytes".
func byteCount(n int64) string {
	s := fmt.Sprint(n)
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s + " bytes"
}
