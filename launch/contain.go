package launch

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/zeoruntime/runtimeipc/launch/contain"
)

// defaultWritePaths are the devices every host may also write.
var defaultWritePaths = []string{"/dev/null", "/dev/zero"}

// defaultReadPaths are the paths every host may read and execute (besides
// its interpreter and environment): the dynamic loader, libraries, the
// interpreter's standard library under /usr, /etc (the loader cache,
// certificates, name service, time zone), /proc and the harmless devices.
// Paths missing on a machine are skipped. contain.Config.ReadPaths lists them.
var defaultReadPaths = []string{"/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/proc",
	"/dev/urandom", "/dev/random"}

// validateContainment checks c (Config.Containment); paths must be
// absolute.
func validateContainment(c *contain.Config) []error {
	var errs []error
	for _, l := range []struct {
		name  string
		paths []string
	}{{"ReadPaths", c.ReadPaths}, {"WritePaths", c.WritePaths},
		{"FilesystemRead", c.FilesystemRead}, {"FilesystemWrite", c.FilesystemWrite}} {
		for _, p := range l.paths {
			if !filepath.IsAbs(p) {
				errs = append(errs, fmt.Errorf("Containment.%s entry %q is not an absolute path", l.name, p))
			}
		}
	}
	if c.WorkspaceRoot != "" {
		if err := checkDir(c.WorkspaceRoot); err != nil {
			errs = append(errs, fmt.Errorf("Containment.WorkspaceRoot: %w", err))
		}
	}
	if c.InitPath != "" && !filepath.IsAbs(c.InitPath) {
		errs = append(errs, fmt.Errorf("Containment.InitPath %q is not an absolute path", c.InitPath))
	}
	if c.Off&^contain.AllLayers != 0 {
		errs = append(errs, fmt.Errorf("Containment.Off has unknown bits %#x", uint(c.Off&^contain.AllLayers)))
	}
	return errs
}

// cloneContainment returns a copy of c sharing nothing with it.
func cloneContainment(c contain.Config) contain.Config {
	c.ReadPaths = slices.Clone(c.ReadPaths)
	c.WritePaths = slices.Clone(c.WritePaths)
	c.FilesystemRead = slices.Clone(c.FilesystemRead)
	c.FilesystemWrite = slices.Clone(c.FilesystemWrite)
	return c
}

// limitOr returns v, or def when v is zero; negative means unset (-1).
func limitOr(v, def int64) int64 {
	switch {
	case v == 0:
		return def
	case v < 0:
		return -1
	}
	return v
}
