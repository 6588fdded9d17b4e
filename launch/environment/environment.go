package environment

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// Trust is a launch.EnvironmentVerifier that accepts every binding. Use it
// only where the environment is verified by other means (an immutable
// image whose digest is checked at deploy time) or in tests; it makes that
// choice visible in the launcher's Config.
type Trust struct{}

// VerifyEnvironment accepts every binding.
func (Trust) VerifyEnvironment(context.Context, manifest.ProviderBinding) error {
	return nil
}

// TreeVerifier is a launch.EnvironmentVerifier that digests a directory tree (the
// provider's virtual environment or install prefix) with DigestTree and
// compares the result with the binding's environment_digest.
//
// It rereads the whole tree on every launch, so its cost grows with the
// tree; and like any check-then-execute scheme it cannot exclude a change
// between the check and the exec, so the tree must not be writable by
// anyone the Runtime does not trust. A TreeVerifier is safe for concurrent
// use.
type TreeVerifier struct {
	// Root is the absolute path of the tree.
	Root string
}

// VerifyEnvironment digests the tree and compares it with
// p.EnvironmentDigest.
func (v TreeVerifier) VerifyEnvironment(ctx context.Context, p manifest.ProviderBinding) error {
	got, err := DigestTree(ctx, v.Root)
	if err != nil {
		return fmt.Errorf("launch: verifying environment %s: %w", v.Root, err)
	}
	if got != p.EnvironmentDigest {
		return fmt.Errorf("%w: %s digests to %s, the binding names %s", launch.ErrEnvironmentMismatch, v.Root, got, p.EnvironmentDigest)
	}
	return nil
}

// treeEntry is one entry of the DigestTree preimage.
type treeEntry struct {
	Path   string `json:"path"`
	Mode   string `json:"mode"`
	SHA256 string `json:"sha256,omitempty"`
	Target string `json:"target,omitempty"`
}

// DigestTree returns the digest of the directory tree at root: the canonical
// JSON array, in lexical path order, of one object per entry below root with
// its slash-separated relative "path", its "mode" (the fs.FileMode string:
// type and permission bits, so a chmod changes the digest), the lowercase
// hex "sha256" of a regular file's contents, and the "target" of a symbolic
// link (links are recorded, never followed). Sockets, devices and pipes are
// recorded by path and mode alone. Owners and timestamps are left out, so
// the same tree copied elsewhere digests the same.
//
// Use it to compute the environment_digest of a provider environment when
// writing its binding. ctx can cancel a long walk.
func DigestTree(ctx context.Context, root string) (canon.Digest, error) {
	if !filepath.IsAbs(root) {
		return "", fmt.Errorf("launch: tree root %q is not absolute", root)
	}
	var entries []treeEntry
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		e := treeEntry{Path: filepath.ToSlash(rel), Mode: info.Mode().String()}
		switch {
		case info.Mode().IsRegular():
			sum, err := hashFile(path)
			if err != nil {
				return err
			}
			e.SHA256 = sum
		case info.Mode()&fs.ModeSymlink != 0:
			t, err := os.Readlink(path)
			if err != nil {
				return err
			}
			e.Target = t
		}
		entries = append(entries, e)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("launch: digesting %s: %w", root, err)
	}
	d, err := canon.DigestOf(entries)
	if err != nil {
		return "", fmt.Errorf("launch: digesting %s: %w", root, err)
	}
	return d, nil
}

// The verifiers are launch.EnvironmentVerifiers.
var (
	_ launch.EnvironmentVerifier = Trust{}
	_ launch.EnvironmentVerifier = TreeVerifier{}
)

func hashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
