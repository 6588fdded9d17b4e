package manifest

import (
	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/manifest/internal/jsonval"
	"github.com/zeoruntime/runtimeipc/manifest/internal/pydantic"
)

// CompileWithoutPrecheck compiles a schema skipping the $ref/$schema key
// walk, to prove the loader alone refuses every external resource.
func CompileWithoutPrecheck(schema map[string]any) error {
	v, err := plainJSON(schema)
	if err != nil {
		return err
	}
	d, err := canon.DigestOf(v)
	if err != nil {
		return err
	}
	_, err = compileDoc(v, d, "", "")
	return err
}

// MarshalReflect encodes a manifest with canon.Marshal's reflection path,
// to check the fast path against it.
func MarshalReflect(m CapabilityManifest) ([]byte, error) {
	return canon.Marshal((*manifestAlias)(&m))
}

// MaterializeDefaults runs the normalizing walk (which materializes
// defaults) over plain JSON values with a given step budget and reports
// whether it finished.
func MaterializeDefaults(schema map[string]any, args map[string]any, budget int) bool {
	_, err := pydantic.Compile(schema).Normalize(args, budget)
	return err == nil
}

// LookupPointer resolves an RFC 6901 pointer in plain JSON arguments.
func LookupPointer(args map[string]any, ptr string) any { return jsonval.Lookup(args, "#"+ptr) }
