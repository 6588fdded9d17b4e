package launch_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/contain"
	"github.com/zeoruntime/runtimeipc/launch/environment"
)

// TestUserAccessChecked checks that New refuses a Config.User that could
// not execute the interpreter or enter the directory, with a
// *UserAccessError naming the path that refuses it once, and accepts one
// that can. The check reads permission bits, so it runs as any user;
// the cases that give a path to uid 65534 need root to chown it.
func TestUserAccessChecked(t *testing.T) {
	t.Parallel()
	u := &contain.User{UID: nobody, GID: nobody}
	root := os.Geteuid() == 0

	// mkdir makes a directory of mode perm inside an open one.
	mkdir := func(t *testing.T, parent string, perm fs.FileMode) string {
		d, err := os.MkdirTemp(parent, "d-")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, perm); err != nil {
			t.Fatal(err)
		}
		return d
	}
	// exe writes an executable file of mode perm into dir.
	exe := func(t *testing.T, dir string, content []byte, perm fs.FileMode) string {
		p := filepath.Join(dir, "host")
		if err := os.WriteFile(p, content, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, perm); err != nil {
			t.Fatal(err)
		}
		return p
	}
	binary, err := os.ReadFile(hostsimPath)
	if err != nil {
		t.Fatal(err)
	}
	script := []byte("#!/bin/sh\nexit 0\n")
	chown := func(t *testing.T, path string, uid, gid int) {
		if !root {
			t.Skip("needs root: it gives a path to uid 65534")
		}
		if err := os.Chown(path, uid, gid); err != nil {
			t.Fatal(err)
		}
	}

	for _, tt := range []struct {
		name string
		// config returns the interpreter and dir, and the path, need and
		// field the refusal must name (path "": no refusal).
		config func(t *testing.T) (interp, dir, path, need, field string)
	}{
		{"usable", func(t *testing.T) (string, string, string, string, string) {
			return hostsimPath, openDir(t), "", "", ""
		}},
		{"dir not enterable", func(t *testing.T) (string, string, string, string, string) {
			d := mkdir(t, openDir(t), 0o700)
			return hostsimPath, d, d, "enter", "Dir"
		}},
		{"dir below one not enterable", func(t *testing.T) (string, string, string, string, string) {
			p := mkdir(t, openDir(t), 0o755)
			d := mkdir(t, p, 0o755)
			if err := os.Chmod(p, 0o750); err != nil {
				t.Fatal(err)
			}
			return hostsimPath, d, p, "enter", "Dir"
		}},
		{"interpreter not executable by others", func(t *testing.T) (string, string, string, string, string) {
			i := exe(t, openDir(t), binary, 0o750)
			return i, openDir(t), i, "execute", "Interpreter"
		}},
		{"interpreter in a private directory", func(t *testing.T) (string, string, string, string, string) {
			d := mkdir(t, openDir(t), 0o755)
			i := exe(t, d, binary, 0o755)
			if err := os.Chmod(d, 0o700); err != nil {
				t.Fatal(err)
			}
			return i, openDir(t), d, "enter", "Interpreter"
		}},
		{"interpreter behind a link into a private directory", func(t *testing.T) (string, string, string, string, string) {
			d := mkdir(t, openDir(t), 0o755)
			i := exe(t, d, binary, 0o755)
			if err := os.Chmod(d, 0o700); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(openDir(t), "python")
			if err := os.Symlink(i, link); err != nil {
				t.Fatal(err)
			}
			return link, openDir(t), d, "enter", "Interpreter"
		}},
		{"script it may execute but not read", func(t *testing.T) (string, string, string, string, string) {
			i := exe(t, openDir(t), script, 0o711)
			return i, openDir(t), i, "read", "Interpreter"
		}},
		{"binary it may execute but not read", func(t *testing.T) (string, string, string, string, string) {
			return exe(t, openDir(t), binary, 0o711), openDir(t), "", "", ""
		}},
		{"dir owned by the user", func(t *testing.T) (string, string, string, string, string) {
			d := mkdir(t, openDir(t), 0o700)
			chown(t, d, nobody, 0)
			return hostsimPath, d, "", "", ""
		}},
		{"dir of the user's group", func(t *testing.T) (string, string, string, string, string) {
			d := mkdir(t, openDir(t), 0o070)
			chown(t, d, 0, nobody)
			return hostsimPath, d, "", "", ""
		}},
		{"dir owned by the user, owner bits closed", func(t *testing.T) (string, string, string, string, string) {
			// The owner class alone applies to the owner: other's bits do
			// not help it.
			d := mkdir(t, openDir(t), 0o007)
			chown(t, d, nobody, 0)
			return hostsimPath, d, d, "enter", "Dir"
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			interp, dir, path, need, field := tt.config(t)
			_, err := launch.New(launch.Config{Interpreter: interp, Dir: dir, Verifier: environment.Trust{}, User: u})
			if path == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			var ue *contain.UserAccessError
			if !errors.Is(err, launch.ErrInvalidConfig) || !errors.As(err, &ue) {
				t.Fatalf("New: %v, want ErrInvalidConfig with a *UserAccessError", err)
			}
			got := [3]string{ue.Path, ue.Need, ue.Field}
			if diff := cmp.Diff([3]string{path, need, field}, got); diff != "" {
				t.Errorf("refusal (path, need, field) (-want +got):\n%s\n%v", diff, err)
			}
			if ue.User != *u {
				t.Errorf("refusal names User %+v, want %+v", ue.User, *u)
			}
			// The cause, once: the path appears in the message once.
			if n := strings.Count(err.Error(), path); n != 1 {
				t.Errorf("the message names %s %d times, want once: %v", path, n, err)
			}
			if !strings.Contains(err.Error(), "cannot "+need+" "+path) {
				t.Errorf("the message %q does not say it cannot %s %s", err, need, path)
			}
		})
	}

	// uid 0 is not judged by permission bits: it needs none to enter.
	d := mkdir(t, openDir(t), 0o700)
	if _, err := launch.New(launch.Config{Interpreter: hostsimPath, Dir: d, Verifier: environment.Trust{},
		User: &contain.User{UID: 0, GID: 0}, AllowRootHost: true}); err != nil {
		t.Errorf("User 0:0: %v", err)
	}
}
