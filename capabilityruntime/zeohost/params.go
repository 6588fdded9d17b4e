package zeohost

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/capabilityruntime"
)

// Keys of Request.Params: what to run. The capability id and its arguments
// are data, never part of the runtime's name.
const (
	// ParamCapabilityID (required) is the exact canonical capability id,
	// e.g. "example.echo@1.0.0".
	ParamCapabilityID = "capability_id"
	// ParamArguments (optional object; absent or null means {}) are the capability's
	// arguments, sent to the host as given (JSON values; the Supervisor
	// refuses what the host's strict parser would).
	ParamArguments = "arguments"
	// ParamOperationID (optional string) is the operation's durable id: an
	// Execute with the id of an earlier one continues that operation (a
	// new attempt, its effects answered from the ledger, or its accepted
	// result returned without launching). Empty means
	// Request.ExecutionID, and when that is empty too a fresh random id,
	// returned in the Response (ResultOperationID).
	ParamOperationID = "operation_id"
)

// call is a Request checked by Execute.
type call struct {
	operationID, capabilityID string
	arguments                 map[string]any
}

type requestParams struct {
	CapabilityID string          `json:"capability_id"`
	Arguments    json.RawMessage `json:"arguments,omitempty"`
	OperationID  string          `json:"operation_id,omitempty"`
}

// parseRequest checks req. The params are re-read from their JSON encoding
// (strictly: unknown keys are refused), so that Go values of any type
// encoding/json encodes arrive as the JSON values the host receives.
func parseRequest(req *capabilityruntime.Request) (call, error) {
	if req == nil {
		return call{}, fmt.Errorf("%w: the request is nil", ErrInvalidParams)
	}
	raw, err := json.Marshal(req.Params)
	if err != nil {
		return call{}, fmt.Errorf("%w: params cannot be encoded as JSON: %w", ErrInvalidParams, err)
	}
	var p requestParams
	if err := canon.Unmarshal(raw, &p); err != nil {
		return call{}, fmt.Errorf("%w: %w (keys: %s, %s, %s)", ErrInvalidParams, err, ParamCapabilityID, ParamArguments, ParamOperationID)
	}
	args := map[string]any{}
	if len(p.Arguments) > 0 && string(p.Arguments) != "null" {
		if err := canon.Unmarshal(p.Arguments, &args); err != nil {
			return call{}, fmt.Errorf("%w: %s: %w", ErrInvalidParams, ParamArguments, err)
		}
	}
	op := p.OperationID
	switch {
	case op != "" && req.ExecutionID != "" && op != req.ExecutionID:
		return call{}, fmt.Errorf("%w: params %s %q and ExecutionID %q differ: give one operation id", ErrInvalidParams, ParamOperationID, op, req.ExecutionID)
	case op == "":
		op = req.ExecutionID
	}
	if op == "" {
		var b [16]byte
		rand.Read(b[:])
		op = "zeohost-" + hex.EncodeToString(b[:])
	}
	return call{operationID: op, capabilityID: p.CapabilityID, arguments: args}, nil
}
