package catalogue_test

import (
	"strings"
	"testing"

	"github.com/zeoruntime/runtimeipc/catalogue"
	"github.com/zeoruntime/runtimeipc/ledger"
)

func TestConsentErrorGrantCommand(t *testing.T) {
	e := &catalogue.ConsentError{Scope: ledger.Scope{OrganizationID: "org-a", ProjectID: "proj-1"}, CapabilityID: "ns.mail@1.0.0",
		Account: "acct-1", Missing: []string{"capability:ns.mail@1.0.0", "credential:gmail", "service:smtp", "effect_kind:write", "effect_operation:send"}}
	got := e.GrantCommand("/srv/it's here/l.db")
	want := `zeoctl catalogue consent grant --ledger '/srv/it'\''s here/l.db' --org org-a --project proj-1 --account acct-1` +
		` --capability ns.mail@1.0.0 --credential gmail --service smtp --effect-kind write --effect-operation send`
	if got != want {
		t.Errorf("GrantCommand:\n%s\nwant\n%s", got, want)
	}
	e.Account = ""
	if got := e.GrantCommand("l.db"); !strings.Contains(got, "--account ACCOUNT ") {
		t.Errorf("without an account: %s", got)
	}
	if msg := e.Error(); !strings.Contains(msg, "credential:gmail, service:smtp") || !strings.Contains(msg, "--ledger LEDGER") {
		t.Errorf("Error() = %s", msg)
	}
}
