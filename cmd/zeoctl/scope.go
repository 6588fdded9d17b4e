package main

import (
	"flag"

	"github.com/zeoruntime/runtimeipc/ledger"
)

// The scope every command uses when -org and -project are not given: the
// one organization and project of a local, single-tenant ledger.
const (
	defaultOrg     = "org-local"
	defaultProject = "project-local"
)

// scopeHelp is `zeoctl help scope`: the one rule for -org and -project.
const scopeHelp = `-org and -project name the scope (organization and project) of an operation,
its effects, its artifacts, a run or a consent. Records are read and written
only within their own scope.

One rule holds in every command: -org defaults to ` + defaultOrg + ` and -project to
` + defaultProject + `, the scope of a local, single-tenant ledger; giving one of them
changes only that half. So 'zeoctl invoke' followed by 'zeoctl ledger
resolve' or 'zeoctl artifact get' on the same ledger needs neither flag.
A default never reaches into another tenant's records: on a shared ledger,
a command that forgot -org finds nothing and says to check the scope.

A listing across the ledger ('ledger operations' without -operation,
'ledger effects -unknown' and '-in-flight', 'catalogue list') lists every
scope; -org or -project keep one scope (the other half defaulting as above).
`

// scopeFlags are -org and -project.
type scopeFlags struct {
	org, project string
	// listing: the flags filter a listing; unset, it covers every scope.
	listing bool
}

// register registers -org and -project. For a command acting within one
// scope they default to defaultOrg and defaultProject; for a listing
// (listing set) they are empty unless given, and scope() fills in the
// defaults for what acts within one scope.
func (s *scopeFlags) register(fs *flag.FlagSet, listing bool) {
	s.listing = listing
	if listing {
		fs.StringVar(&s.org, "org", "", "keep this organization `id` (default: every scope; "+defaultOrg+" where one scope is meant; see 'zeoctl help scope')")
		fs.StringVar(&s.project, "project", "", "keep this project `id` (default: every scope; "+defaultProject+" where one scope is meant)")
		return
	}
	fs.StringVar(&s.org, "org", defaultOrg, "the organization `id` (see 'zeoctl help scope')")
	fs.StringVar(&s.project, "project", defaultProject, "the project `id`")
}

// filtered reports whether a listing was narrowed to one scope.
func (s *scopeFlags) filtered() bool { return s.org != "" || s.project != "" }

// scope is the scope the flags name, with the defaults filled in.
func (s *scopeFlags) scope() ledger.Scope {
	sc := ledger.Scope{OrganizationID: s.org, ProjectID: s.project}
	if sc.OrganizationID == "" {
		sc.OrganizationID = defaultOrg
	}
	if sc.ProjectID == "" {
		sc.ProjectID = defaultProject
	}
	return sc
}
