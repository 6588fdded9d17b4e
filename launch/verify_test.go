package launch_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/discovery"
	"github.com/zeoruntime/runtimeipc/launch/environment"
)

// envTree makes a provider environment: a copy of the host executable and a
// small package tree.
func envTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	exe, err := os.ReadFile(hostsimPath)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "bin"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "lib", "site"), 0o755))
	must(os.WriteFile(filepath.Join(root, "bin", "zeo-hostsim"), exe, 0o755))
	must(os.WriteFile(filepath.Join(root, "lib", "site", "provider.py"), []byte("def factory(): ...\n"), 0o644))
	must(os.Symlink("zeo-hostsim", filepath.Join(root, "bin", "zeo-capability")))
	return root
}

func TestDigestTree(t *testing.T) {
	ctx := context.Background()
	root := envTree(t)
	d0, err := environment.DigestTree(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if err := d0.Validate(); err != nil {
		t.Fatal(err)
	}
	// The same tree elsewhere digests the same.
	if again, _ := environment.DigestTree(ctx, root); again != d0 {
		t.Fatal("digest is not deterministic")
	}
	py := filepath.Join(root, "lib", "site", "provider.py")
	changes := []struct {
		name   string
		change func() error
	}{
		{"content", func() error { return os.WriteFile(py, []byte("def factory(): return 1\n"), 0o644) }},
		{"mode", func() error { return os.Chmod(py, 0o755) }},
		{"new file", func() error { return os.WriteFile(filepath.Join(root, "lib", "x.pth"), nil, 0o644) }},
		{"symlink target", func() error {
			link := filepath.Join(root, "bin", "zeo-capability")
			if err := os.Remove(link); err != nil {
				return err
			}
			return os.Symlink("/usr/bin/python3", link)
		}},
	}
	prev := d0
	for _, c := range changes {
		if err := c.change(); err != nil {
			t.Fatal(err)
		}
		d, err := environment.DigestTree(ctx, root)
		if err != nil {
			t.Fatal(err)
		}
		if d == prev {
			t.Fatalf("%s change left the digest unchanged", c.name)
		}
		prev = d
	}
	if _, err := environment.DigestTree(ctx, "relative"); err == nil {
		t.Fatal("relative root accepted")
	}
}

// TestTreeVerifierGuardsLaunch: a launch runs only while the environment
// digests to the binding's environment_digest; after a change it is refused
// before any process starts.
func TestTreeVerifierGuardsLaunch(t *testing.T) {
	ctx := testCtx(t)
	root := envTree(t)
	digest, err := environment.DigestTree(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	l, err := launch.New(launch.Config{
		Interpreter: filepath.Join(root, "bin", "zeo-hostsim"), Dir: t.TempDir(),
		Verifier: environment.TreeVerifier{Root: root}, AllowRootHost: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	f.binding.EnvironmentDigest = digest
	inv := f.invocation(t, "echo", map[string]any{"text": "hello"}, nil)
	if out, err := l.Invoke(ctx, inv); err != nil || out.Result.State != launch.StateSucceeded {
		t.Fatalf("verified launch: %v", err)
	}
	if _, err := discovery.Describe(ctx, l, f.binding); err != nil {
		t.Fatalf("verified discovery: %v", err)
	}
	if err := os.WriteFile(filepath.Join(root, "lib", "site", "provider.py"), []byte("import os\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := l.Invoke(ctx, inv)
	if !errors.Is(err, launch.ErrEnvironmentMismatch) || out != nil {
		t.Fatalf("tampered environment: out %v, err %v", out, err)
	}
	if _, err := discovery.Describe(ctx, l, f.binding); !errors.Is(err, launch.ErrEnvironmentMismatch) {
		t.Fatalf("tampered discovery: %v", err)
	}
}

func TestConfigValidation(t *testing.T) {
	dir := t.TempDir()
	good := launch.Config{Interpreter: hostsimPath, Dir: dir, Verifier: environment.Trust{}, AllowRootHost: true}
	if _, err := launch.New(good); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(c *launch.Config){
		"relative interpreter": func(c *launch.Config) { c.Interpreter = "zeo-hostsim" },
		"missing interpreter":  func(c *launch.Config) { c.Interpreter = filepath.Join(dir, "nope") },
		"directory as program": func(c *launch.Config) { c.Interpreter = dir },
		"relative dir":         func(c *launch.Config) { c.Dir = "work" },
		"missing dir":          func(c *launch.Config) { c.Dir = filepath.Join(dir, "nope") },
		"env without =":        func(c *launch.Config) { c.Env = []string{"PATH"} },
		"env twice":            func(c *launch.Config) { c.Env = []string{"A=1", "A=2"} },
		"env empty key":        func(c *launch.Config) { c.Env = []string{"=1"} },
		"nil verifier":         func(c *launch.Config) { c.Verifier = nil },
		"negative grace":       func(c *launch.Config) { c.Grace = -1 },
	} {
		c := good
		mutate(&c)
		if _, err := launch.New(c); !errors.Is(err, launch.ErrInvalidConfig) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	l, _ := launch.New(good)
	f := newFixture(t)
	inv := f.invocation(t, "echo", map[string]any{"text": "hello"}, nil)
	inv.Handler = nil
	if _, err := l.Invoke(context.Background(), inv); !errors.Is(err, launch.ErrInvalidConfig) {
		t.Errorf("nil handler: %v", err)
	}
	inv = f.invocation(t, "echo", map[string]any{"text": "hello"}, nil)
	inv.Context.BootstrapID = ""
	if _, err := l.Invoke(context.Background(), inv); !errors.Is(err, launch.ErrInvalidContext) {
		t.Errorf("invalid context: %v", err)
	}
}
