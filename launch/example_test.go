package launch_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
)

// ParseResult checks what a host left behind, its one stdout line and its
// exit status, against the attempt the Runtime launched. A result that
// names another attempt, or an exit status other than its state's, is a
// protocol failure, whatever the line says.
func ExampleParseResult() {
	want := ipc.AttemptBinding{
		OrganizationID: "org-a", ProjectID: "project-a", SeatID: "seat-a", RuntimeBindingID: "runtime-a",
		PacketID: "packet-a", OperationID: "op-a", AttemptID: "attempt-a", FencingGeneration: 1,
		CapabilityID:  "example.echo@1.0.0",
		RequestDigest: canon.Sum([]byte("request")), ManifestDigest: canon.Sum([]byte("manifest")),
	}
	line, err := canon.Marshal(launch.HostResult{ProtocolVersion: 1, State: launch.StateSucceeded,
		EffectDisposition: launch.EffectNone, Binding: &want, ArtifactRefs: []string{"artifact-a"}})
	if err != nil {
		log.Fatal(err)
	}
	stdout := append(line, '\n')

	r, err := launch.ParseResult(stdout, 0, want)
	fmt.Println(r.State, r.ArtifactRefs, err)

	_, err = launch.ParseResult(stdout, 5, want) // the exit status of "failed"
	var re *launch.ResultError
	fmt.Println("exit 5:", errors.Is(err, launch.ErrExitMismatch), errors.As(err, &re) && re.WantExitCode == 0)

	other := want
	other.AttemptID = "attempt-b"
	_, err = launch.ParseResult(stdout, 0, other)
	fmt.Println("another attempt:", errors.Is(err, launch.ErrBindingMismatch), errors.Is(err, launch.ErrBadResult))
	// Output:
	// succeeded [artifact-a] <nil>
	// exit 5: true true
	// another attempt: true true
}
