package ipc

import "github.com/zeoruntime/runtimeipc/canon"

// AttemptBinding names one attempt of one operation. The host carries it
// verbatim in every request; every reply and the final HostResult must carry
// a binding equal to it field by field. All fields are required.
type AttemptBinding struct {
	OrganizationID    string       `json:"organization_id"`
	ProjectID         string       `json:"project_id"`
	SeatID            string       `json:"seat_id"`
	RuntimeBindingID  string       `json:"runtime_binding_id"`
	PacketID          string       `json:"packet_id"`
	OperationID       string       `json:"operation_id"`
	AttemptID         string       `json:"attempt_id"`
	FencingGeneration int64        `json:"fencing_generation"`
	CapabilityID      string       `json:"capability_id"`
	RequestDigest     canon.Digest `json:"request_digest"`
	ManifestDigest    canon.Digest `json:"manifest_digest"`
}
