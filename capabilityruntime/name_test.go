package capabilityruntime_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
)

func TestParseType(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in        string
		owner     string
		segments  []string
		wantError string // substring of NameError.Problem; "" for success
	}{
		{in: "github:read", owner: "github", segments: []string{"read"}},
		{in: "neuron-runtime:github:read", owner: "neuron-runtime", segments: []string{"github", "read"}},
		{in: "hashicorp:vault:auth", owner: "hashicorp", segments: []string{"vault", "auth"}},
		{in: "Muhammad-Jay:GitHub:Read", owner: "Muhammad-Jay", segments: []string{"GitHub", "Read"}}, // case kept
		{in: "  github  :read", owner: "github", segments: []string{"read"}},                          // owner trimmed, as upstream
		{in: "github: read ", owner: "github", segments: []string{"read"}},                            // segments trimmed too (fixed)
		{in: "a.b:c-d_e:v1.2", owner: "a.b", segments: []string{"c-d_e", "v1.2"}},                     // dots inside a segment are fine
		{in: "ünïcode:名前", owner: "ünïcode", segments: []string{"名前"}},

		{in: "", wantError: "at least one ':'"},
		{in: "foo", wantError: "at least one ':'"},
		{in: ":read", wantError: "owner segment is empty"},
		{in: "  :read", wantError: "owner segment is empty"},
		{in: "foo::bar", wantError: "path segment 1 is empty"},
		{in: "foo:", wantError: "path segment 1 is empty"},
		{in: "foo:bar:", wantError: "path segment 2 is empty"},
		{in: "foo: ", wantError: "path segment 1 is empty"}, // blank segment (fixed: upstream accepted " ")
		// The traversal defects: each of these escaped the store upstream.
		{in: "..:..:etc", wantError: `owner segment is ".."`},
		{in: "owner:..", wantError: `path segment 1 is ".."`},
		{in: ".:x", wantError: `owner segment is "."`},
		{in: "owner:a/b", wantError: "path separator"},
		{in: "Muhammad-Jay/github:read", wantError: "owner segment contains a path separator"},
		{in: `owner:a\b`, wantError: "path separator"},
		{in: "owner:/etc", wantError: "path separator"},
		{in: "own er:x", wantError: "whitespace"},
		{in: "owner:x\x00", wantError: "control character"},
		{in: "owner:\xff", wantError: "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			n, err := capabilityruntime.ParseType(tt.in)
			if tt.wantError != "" {
				var ne *capabilityruntime.NameError
				if !errors.As(err, &ne) || !errors.Is(err, capabilityruntime.ErrInvalidName) {
					t.Fatalf("ParseType(%q) = %v, %v; want a *NameError wrapping ErrInvalidName", tt.in, n, err)
				}
				if ne.Name != tt.in || !strings.Contains(ne.Problem, tt.wantError) {
					t.Fatalf("NameError = {%q, %q}; want name %q and a problem containing %q", ne.Name, ne.Problem, tt.in, tt.wantError)
				}
				if _, err := capabilityruntime.TypePath(tt.in); !errors.Is(err, capabilityruntime.ErrInvalidName) {
					t.Errorf("TypePath(%q) error = %v; want ErrInvalidName", tt.in, err)
				}
				if _, err := capabilityruntime.NormalizeType(tt.in); !errors.Is(err, capabilityruntime.ErrInvalidName) {
					t.Errorf("NormalizeType(%q) error = %v; want ErrInvalidName", tt.in, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseType(%q): %v", tt.in, err)
			}
			want := &capabilityruntime.NameSplit{Owner: tt.owner, PathSegments: tt.segments}
			if diff := cmp.Diff(want, n); diff != "" {
				t.Fatalf("ParseType(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestNameSplitRenderings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, canonical, repo, local string
	}{
		{"github:read", "github:read", "github/read", "github/read"},
		{"neuron-runtime:github:read", "neuron-runtime:github:read", "neuron-runtime/github-read", "neuron-runtime/github/read"},
		{"hashicorp:vault:auth", "hashicorp:vault:auth", "hashicorp/vault-auth", "hashicorp/vault/auth"},
		{" github : read ", "github:read", "github/read", "github/read"},
	}
	for _, tt := range tests {
		n, err := capabilityruntime.ParseType(tt.in)
		if err != nil {
			t.Fatalf("ParseType(%q): %v", tt.in, err)
		}
		local := filepath.FromSlash(tt.local)
		if got := n.String(); got != tt.canonical {
			t.Errorf("%q String() = %q, want %q", tt.in, got, tt.canonical)
		}
		if got := n.ToGitHubRepo(); got != tt.repo {
			t.Errorf("%q ToGitHubRepo() = %q, want %q", tt.in, got, tt.repo)
		}
		if got := n.ToLocalPath(); got != local {
			t.Errorf("%q ToLocalPath() = %q, want %q", tt.in, got, local)
		}
		if got, err := capabilityruntime.TypePath(tt.in); err != nil || got != local {
			t.Errorf("TypePath(%q) = %q, %v; want %q", tt.in, got, err, local)
		}
		if got, err := capabilityruntime.NormalizeType(tt.in); err != nil || got != tt.canonical {
			t.Errorf("NormalizeType(%q) = %q, %v; want %q", tt.in, got, err, tt.canonical)
		}
	}
}

// FuzzParseType checks the properties the store relies on for any input: a
// name that parses has a canonical form that is a fixed point, and its store
// path, joined under a root, stays strictly inside that root.
func FuzzParseType(f *testing.F) {
	for _, s := range []string{"github:read", "..:..:etc", "a:b:c", " a : b ", "a/b:c", "a:.", "a:...", "x:\u2028"} {
		f.Add(s)
	}
	root := filepath.FromSlash("/store/root")
	f.Fuzz(func(t *testing.T, s string) {
		n, err := capabilityruntime.ParseType(s)
		if err != nil {
			if !errors.Is(err, capabilityruntime.ErrInvalidName) {
				t.Fatalf("ParseType(%q) error %v does not wrap ErrInvalidName", s, err)
			}
			return
		}
		canon := n.String()
		again, err := capabilityruntime.NormalizeType(canon)
		if err != nil || again != canon {
			t.Fatalf("NormalizeType(%q) = %q, %v; canonical form is not a fixed point", canon, again, err)
		}
		joined := filepath.Join(root, n.ToLocalPath())
		rel, err := filepath.Rel(root, joined)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			t.Fatalf("store path of %q is %q: outside %q", s, joined, root)
		}
		if got := strings.Count(rel, string(filepath.Separator)) + 1; got != 1+len(n.PathSegments) {
			t.Fatalf("store path of %q has %d levels, want %d", s, got, 1+len(n.PathSegments))
		}
	})
}
