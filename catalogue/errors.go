package catalogue

import (
	"errors"
	"fmt"
	"strings"

	"github.com/zeoruntime/runtimeipc/ledger"
)

// Errors of the catalogue's methods. Each is wrapped with what was refused
// and where; test with errors.Is. Ledger errors (cataloguestore.ErrStaleGeneration,
// cataloguestore.ErrReserved, storage failures) are wrapped as they come.
var (
	// ErrInvalidConfig is returned by New; the message lists every problem.
	ErrInvalidConfig = errors.New("catalogue: invalid config")

	// ErrInvalidAdmission is returned by Admit for a binding that fails
	// manifest validation or an audience that is malformed or names a
	// capability the binding does not hold. Nothing is recorded.
	ErrInvalidAdmission = errors.New("catalogue: invalid admission")

	// ErrDiscoveryDisagrees is returned by Admit when the host's own static
	// discovery does not report the binding's manifest digest, or fails.
	// Nothing is recorded: the installed provider is not the one the
	// binding describes.
	ErrDiscoveryDisagrees = errors.New("catalogue: the host's discovery does not agree with the binding")

	// ErrCapabilityTaken is returned by Admit when a capability id of the
	// binding is held by the latest generation of another provider: a
	// canonical id names one provider's capability.
	ErrCapabilityTaken = errors.New("catalogue: capability id admitted by another provider")

	// ErrUnknownCapability is returned for a capability id that is not in
	// the catalogue, and, with exactly the same text, for one that exists
	// outside the caller's scope.
	ErrUnknownCapability = errors.New("catalogue: unknown capability")

	// ErrConsentRequired is returned, in a *ConsentError, when the scope
	// has not consented to what a run or an effect needs. Grant the
	// consent (explicitly) and run again.
	ErrConsentRequired = errors.New("catalogue: consent required")

	// ErrAccountRequired is returned, in an *AccountError, when more than
	// one connection account could serve a call that names none: the
	// caller must choose.
	ErrAccountRequired = errors.New("catalogue: several connection accounts could serve; name one")

	// ErrPinMismatch is returned by Prepare when the operation id is
	// already pinned to another capability or account: use a new
	// operation id for a new request. (The Supervisor's check of the
	// recorded request is supervise.ErrOperationMismatch.)
	ErrPinMismatch = errors.New("catalogue: operation is pinned to another capability or account")

	// ErrNotPinned is returned by CheckAdmission and CheckEffect for an
	// operation that was never prepared through the catalogue.
	ErrNotPinned = errors.New("catalogue: operation was not prepared by the catalogue")

	// ErrReservationLost is returned by Recheck when the attempt no
	// longer holds every reservation its capability needs.
	ErrReservationLost = errors.New("catalogue: reservation no longer held")

	// ErrInvalidCall is returned for a malformed argument (scope,
	// identifiers, consent sets). Nothing is recorded; fix the caller.
	ErrInvalidCall = errors.New("catalogue: invalid call")
)

// unknownCapability is the one error for an unknown or invisible id: its
// text depends on nothing but the id the caller gave.
func unknownCapability(id string) error {
	return fmt.Errorf("%w: %q", ErrUnknownCapability, id)
}

// ConsentError says what a scope has not consented to. It wraps
// [ErrConsentRequired].
type ConsentError struct {
	Scope        ledger.Scope
	CapabilityID string
	// Account is the connection account asked about; empty when no
	// account has consent at all.
	Account string
	// Missing lists what is not consented, as "kind:value" (for example
	// "capability:ns.name@1.0.0", "credential:gmail", "effect_operation:send").
	Missing []string
}

// Error names the capability, the account and everything missing, and
// the one command that grants exactly that (with LEDGER for the ledger,
// and ACCOUNT when no account was named).
func (e *ConsentError) Error() string {
	acct := "no connection account"
	if e.Account != "" {
		acct = fmt.Sprintf("connection account %q", e.Account)
	}
	return fmt.Sprintf("%v: capability %q with %s in organization %q project %q lacks consent for %s; an operator grants exactly that with: %s",
		ErrConsentRequired, e.CapabilityID, acct, e.Scope.OrganizationID, e.Scope.ProjectID, strings.Join(e.Missing, ", "), e.GrantCommand("LEDGER"))
}

// GrantCommand returns the zeoctl command that grants exactly what is
// missing, on the ledger named ledger. Without an account (no consent
// named one), the account is ACCOUNT, for the operator to choose. Effect
// operations are not declared by manifests: each is missing only once the
// capability requests it, so a later effect may ask for another.
func (e *ConsentError) GrantCommand(ledger string) string {
	account := e.Account
	if account == "" {
		account = "ACCOUNT"
	}
	args := []string{"zeoctl", "catalogue", "consent", "grant", "--ledger", shellQuote(ledger),
		"--org", shellQuote(e.Scope.OrganizationID), "--project", shellQuote(e.Scope.ProjectID), "--account", shellQuote(account)}
	flags := map[string]string{"capability": "--capability", "credential": "--credential", "service": "--service",
		"effect_kind": "--effect-kind", "effect_operation": "--effect-operation"}
	for _, m := range e.Missing {
		kind, v, ok := strings.Cut(m, ":")
		if f, known := flags[kind]; ok && known {
			args = append(args, f, shellQuote(v))
		}
	}
	return strings.Join(args, " ")
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// characters safe unquoted.
func shellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./_-", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Unwrap returns [ErrConsentRequired].
func (e *ConsentError) Unwrap() error { return ErrConsentRequired }

// AccountError lists the accounts that could serve a call that named
// none. It wraps [ErrAccountRequired].
type AccountError struct {
	CapabilityID string
	// Candidates are the consented accounts, sorted.
	Candidates []string
}

// Error names the candidates.
func (e *AccountError) Error() string {
	return fmt.Sprintf("%v: capability %q could run with any of the connection accounts %s; name one",
		ErrAccountRequired, e.CapabilityID, strings.Join(quoteAll(e.Candidates), ", "))
}

// Unwrap returns [ErrAccountRequired].
func (e *AccountError) Unwrap() error { return ErrAccountRequired }

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
