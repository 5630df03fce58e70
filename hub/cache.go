package hub

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// ErrNotCached reports a reference the cache does not hold completely.
var ErrNotCached = errors.New("not in the Hugging Face cache")

// Cache is a Hugging Face hub cache directory in huggingface_hub's layout:
//
//	DIR/models--ORG--NAME/refs/REVISION          the commit hash REVISION points at
//	DIR/models--ORG--NAME/blobs/ETAG             file contents, named by ETag (SHA-256 for LFS files)
//	DIR/models--ORG--NAME/snapshots/COMMIT/FILE  relative symlinks into ../../blobs
//	DIR/.locks/models--ORG--NAME/ETAG.lock       held while a blob downloads
//
// Where symbolic links cannot be made (Windows without the privilege) huggingface_hub
// leaves regular files in snapshots/ instead, and so does Pull (hard links, else copies);
// both layouts read the same. Files written here can be read by huggingface_hub and the
// other way round.
type Cache struct {
	Dir string
}

// RepoDir is the folder of one repository in the cache.
func (c Cache) RepoDir(repo string) string {
	return filepath.Join(c.Dir, "models--"+strings.ReplaceAll(repo, "/", "--"))
}

// commit returns the commit hash ref points at in the cache.
func (c Cache) commit(ref Ref) (string, error) {
	if IsCommit(ref.Revision) {
		return ref.Revision, nil
	}
	b, err := readRegular(filepath.Join(c.RepoDir(ref.Repo), "refs", filepath.FromSlash(ref.Revision)), 1024)
	if errors.Is(err, ErrUnsafeCache) {
		return "", fmt.Errorf("%s: %w", ref, err)
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", ref, ErrNotCached)
	}
	commit := strings.TrimSpace(string(b))
	if !IsCommit(commit) {
		return "", fmt.Errorf("%s: refs/%s holds %q, not a commit hash", ref, ref.Revision, commit)
	}
	return commit, nil
}

// Snapshot returns the snapshot folder of ref if the cache holds everything an export
// needs from it: config.json and every safetensors file (all the shards an index names).
func (c Cache) Snapshot(ref Ref) (string, error) {
	commit, err := c.commit(ref)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(c.RepoDir(ref.Repo), "snapshots", commit)
	if missing := missingFiles(dir); len(missing) > 0 {
		return "", fmt.Errorf("%s: snapshot %s lacks %s: %w", ref, commit[:12], strings.Join(missing, ", "), ErrNotCached)
	}
	return dir, nil
}

// missingFiles lists what an export needs that the folder lacks.
func missingFiles(dir string) []string {
	var missing []string
	if !regular(filepath.Join(dir, "config.json")) {
		missing = append(missing, "config.json")
	}
	idx := filepath.Join(dir, safetensorsIndex)
	switch {
	case regular(idx):
		shards, err := indexShards(idx)
		if err != nil {
			return append(missing, safetensorsIndex+" ("+err.Error()+")")
		}
		for _, s := range shards {
			if !regular(filepath.Join(dir, filepath.FromSlash(s))) {
				missing = append(missing, s)
			}
		}
	case !regular(filepath.Join(dir, "model.safetensors")):
		missing = append(missing, "model.safetensors")
	}
	return missing
}

// regular reports whether path (after symlinks) is a regular file.
func regular(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

const safetensorsIndex = "model.safetensors.index.json"

// indexShards reads the shard names of a safetensors index.
func indexShards(path string) ([]string, error) {
	b, err := readRegular(path, 64<<20)
	if err != nil {
		return nil, err
	}
	return parseIndexShards(b)
}

func parseIndexShards(b []byte) ([]string, error) {
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, fmt.Errorf("not a safetensors index: %w", err)
	}
	set := map[string]bool{}
	for _, f := range idx.WeightMap {
		if !safeRelPath(f) {
			return nil, fmt.Errorf("shard name %q is not a safe file name inside the repository", f)
		}
		set[f] = true
	}
	var shards []string
	for f := range set {
		shards = append(shards, f)
	}
	sort.Strings(shards)
	return shards, nil
}

// safeRelPath reports whether a repository file name stays inside the snapshot folder and
// means the same file on every system: no "..", no absolute or drive paths, no control
// characters and none of the characters Windows gives a meaning (\ : * ? " < > |).
func safeRelPath(name string) bool {
	return name != "" && len(name) <= 1024 && fs.ValidPath(name) &&
		!strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f || strings.ContainsRune(`\:*?"<>|`, r) })
}

// CachedRepo describes one repository in the cache.
type CachedRepo struct {
	Repo      string            // ORG/NAME
	Dir       string            // its folder in the cache
	Refs      map[string]string // revision → commit
	Snapshots []string          // commit hashes with a snapshot folder
	Bytes     int64             // size of its blobs, and of snapshot files that are copies, not links
}

// List returns the model repositories in the cache, sorted by name.
func (c Cache) List() ([]CachedRepo, error) {
	ents, err := os.ReadDir(c.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []CachedRepo
	for _, e := range ents {
		name, ok := strings.CutPrefix(e.Name(), "models--")
		if !ok || !e.IsDir() {
			continue
		}
		org, rest, ok := strings.Cut(name, "--")
		if !ok {
			continue
		}
		r := CachedRepo{Repo: org + "/" + rest, Dir: filepath.Join(c.Dir, e.Name()), Refs: map[string]string{}}
		refs := filepath.Join(r.Dir, "refs")
		filepath.WalkDir(refs, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if b, err := readRegular(p, 1024); err == nil {
					rel, _ := filepath.Rel(refs, p)
					r.Refs[filepath.ToSlash(rel)] = strings.TrimSpace(string(b))
				}
			}
			return nil
		})
		snapshots := filepath.Join(r.Dir, "snapshots")
		if snaps, err := os.ReadDir(snapshots); err == nil {
			for _, s := range snaps {
				r.Snapshots = append(r.Snapshots, s.Name())
			}
		}
		filepath.WalkDir(snapshots, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() { // a copy (huggingface_hub without symlinks)
				if info, err := d.Info(); err == nil {
					r.Bytes += info.Size()
				}
			}
			return nil
		})
		if blobs, err := os.ReadDir(filepath.Join(r.Dir, "blobs")); err == nil {
			for _, b := range blobs {
				if info, err := b.Info(); err == nil && info.Mode().IsRegular() {
					r.Bytes += info.Size()
				}
			}
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Repo < out[j].Repo })
	return out, nil
}

// Remove deletes a repository (every revision and blob) from the cache.
func (c Cache) Remove(repo string) error {
	if _, err := ParseRef(repo); err != nil {
		return err
	}
	dir := c.RepoDir(repo)
	if _, err := os.Lstat(dir); err != nil {
		return fmt.Errorf("%s: %w", repo, ErrNotCached)
	}
	return os.RemoveAll(dir)
}
