package ipc

import (
	"fmt"
	"strconv"

	"github.com/zeoruntime/runtimeipc/canon"
)

// This file decodes the envelopes from a parsed canon.Value and encodes
// replies by hand. The rules are canon.Unmarshal's (exact member names,
// unknown and missing members refused, no type coercion) but without
// reflection, which dominated the cost of an exchange.

// fieldSet decodes one JSON object member by member.
type fieldSet struct {
	ptr  string
	seen uint32
	err  error
}

func (f *fieldSet) fail(v *canon.Value, sentinel error, key, format string, args ...any) {
	if f.err == nil {
		f.err = &canon.Error{Err: sentinel, Offset: int64(v.Offset), Pointer: f.ptr + "/" + key, Detail: fmt.Sprintf(format, args...)}
	}
}

func (f *fieldSet) str(v *canon.Value, key string, dst *string) {
	if v.Kind != canon.String {
		f.fail(v, canon.ErrType, key, "got %s, want string", v.Kind)
		return
	}
	*dst = v.Str
}

func (f *fieldSet) integer(v *canon.Value, key string, dst *int64) {
	if v.Kind != canon.Integer {
		f.fail(v, canon.ErrType, key, "got %s, want integer", v.Kind)
		return
	}
	*dst = v.Int
}

func (f *fieldSet) object(v *canon.Value, key string, dst *map[string]any) {
	if v.Kind != canon.Object {
		f.fail(v, canon.ErrType, key, "got %s, want object", v.Kind)
		return
	}
	*dst = v.Interface().(map[string]any)
}

// walk calls set with the index in names of each member of the object v;
// an unknown member or a missing name is an error.
func (f *fieldSet) walk(v *canon.Value, names []string, set func(i int, m *canon.Value)) error {
	if v.Kind != canon.Object {
		return &canon.Error{Err: canon.ErrType, Offset: int64(v.Offset), Pointer: f.ptr, Detail: fmt.Sprintf("got %s, want object", v.Kind)}
	}
	for i := range v.Members {
		m := &v.Members[i]
		idx := -1
		for j, n := range names {
			if n == m.Key {
				idx = j
				break
			}
		}
		if idx < 0 {
			f.fail(&m.Value, canon.ErrUnknownField, m.Key, "unknown member %q", truncate(m.Key))
			break
		}
		f.seen |= 1 << idx
		set(idx, &m.Value)
		if f.err != nil {
			break
		}
	}
	if f.err == nil {
		for j, n := range names {
			if f.seen&(1<<j) == 0 {
				f.fail(v, canon.ErrMissingField, n, "missing member %q", n)
				break
			}
		}
	}
	return f.err
}

var bindingNames = []string{"organization_id", "project_id", "seat_id", "runtime_binding_id", "packet_id",
	"operation_id", "attempt_id", "fencing_generation", "capability_id", "request_digest", "manifest_digest"}

func decodeBinding(v *canon.Value, ptr string) (AttemptBinding, error) {
	var b AttemptBinding
	f := fieldSet{ptr: ptr}
	err := f.walk(v, bindingNames, func(i int, m *canon.Value) {
		k := bindingNames[i]
		switch i {
		case 0:
			f.str(m, k, &b.OrganizationID)
		case 1:
			f.str(m, k, &b.ProjectID)
		case 2:
			f.str(m, k, &b.SeatID)
		case 3:
			f.str(m, k, &b.RuntimeBindingID)
		case 4:
			f.str(m, k, &b.PacketID)
		case 5:
			f.str(m, k, &b.OperationID)
		case 6:
			f.str(m, k, &b.AttemptID)
		case 7:
			f.integer(m, k, &b.FencingGeneration)
		case 8:
			f.str(m, k, &b.CapabilityID)
		case 9:
			f.str(m, k, (*string)(&b.RequestDigest))
		case 10:
			f.str(m, k, (*string)(&b.ManifestDigest))
		}
	})
	return b, err
}

var requestNames = []string{"binding", "host_nonce", "method", "payload", "protocol_version", "sequence"}

func decodeRequestValue(v *canon.Value, req *Request) error {
	f := fieldSet{}
	return f.walk(v, requestNames, func(i int, m *canon.Value) {
		k := requestNames[i]
		switch i {
		case 0:
			b, err := decodeBinding(m, "/binding")
			if err != nil && f.err == nil {
				f.err = err
			}
			req.Binding = b
		case 1:
			f.str(m, k, &req.HostNonce)
		case 2:
			f.str(m, k, (*string)(&req.Method))
		case 3:
			req.Payload = *m
		case 4:
			f.integer(m, k, &req.ProtocolVersion)
		case 5:
			f.integer(m, k, &req.Sequence)
		}
	})
}

var replyNames = []string{"protocol_version", "sequence", "host_nonce", "binding", "request_digest", "state", "data"}

func decodeReplyValue(v *canon.Value, rep *Reply) error {
	f := fieldSet{}
	return f.walkOptional(v, replyNames, 1<<6, func(i int, m *canon.Value) {
		k := replyNames[i]
		switch i {
		case 0:
			f.integer(m, k, &rep.ProtocolVersion)
		case 1:
			f.integer(m, k, &rep.Sequence)
		case 2:
			f.str(m, k, &rep.HostNonce)
		case 3:
			b, err := decodeBinding(m, "/binding")
			if err != nil && f.err == nil {
				f.err = err
			}
			rep.Binding = b
		case 4:
			f.str(m, k, (*string)(&rep.RequestDigest))
		case 5:
			f.str(m, k, (*string)(&rep.State))
		case 6:
			var d map[string]any
			f.object(m, k, &d)
			rep.Data = d
		}
	})
}

// walkOptional is walk where the members whose bits are in optional may
// be absent.
func (f *fieldSet) walkOptional(v *canon.Value, names []string, optional uint32, set func(i int, m *canon.Value)) error {
	f.seen = optional
	return f.walk(v, names, set)
}

// appendObject appends the canonical form of a map (nil is {}), in place.
func appendObject(dst []byte, m map[string]any) ([]byte, error) {
	if len(m) == 0 {
		return append(dst, '{', '}'), nil
	}
	return canon.AppendMarshal(dst, m)
}

// AppendCanonical appends the RFC 8785 bytes of e (nil arguments as {}).
func (e EffectRequest) AppendCanonical(dst []byte) ([]byte, error) {
	var err error
	dst = append(dst, `{"arguments":`...)
	if dst, err = appendObject(dst, e.Arguments); err != nil {
		return dst, err
	}
	for _, kv := range [...]struct{ k, v string }{
		{`,"connection_ref":`, e.ConnectionRef}, {`,"connector_revision":`, string(e.ConnectorRevision)},
		{`,"logical_effect_id":`, e.LogicalEffectID}, {`,"operation":`, e.Operation},
	} {
		dst = append(dst, kv.k...)
		if dst, err = canon.AppendString(dst, kv.v); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// appendEffectReceipt appends the data of an allowed effect reply.
func appendEffectReceipt(dst []byte, r EffectReceipt) ([]byte, error) {
	var err error
	dst = append(dst, '{')
	for i, kv := range [...]struct{ k, v string }{
		{`"authorization_id":`, r.AuthorizationID}, {`"effect_disposition":`, r.EffectDisposition},
		{`"effect_request_digest":`, string(r.EffectRequestDigest)}, {`"logical_effect_id":`, r.LogicalEffectID},
		{`"receipt_id":`, r.ReceiptID},
	} {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, kv.k...)
		if dst, err = canon.AppendString(dst, kv.v); err != nil {
			return dst, err
		}
	}
	if r.Result != nil {
		dst = append(dst, `,"result":`...)
		if dst, err = appendObject(dst, r.Result); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// appendPublishReceipt appends the data of an allowed publish reply.
func appendPublishReceipt(dst []byte, r PublishReceipt) ([]byte, error) {
	var err error
	dst = append(dst, `{"artifact_refs":[`...)
	for i, ref := range r.ArtifactRefs {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, err = canon.AppendString(dst, ref); err != nil {
			return dst, err
		}
	}
	dst = append(dst, `],"data_digest":`...)
	if dst, err = canon.AppendString(dst, string(r.DataDigest)); err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}

// appendReply appends the canonical RuntimeReply: members in RFC 8785
// order (binding, data, host_nonce, protocol_version, request_digest,
// sequence, state). binding is the binding's canonical bytes and data the
// canonical bytes of the data object.
func appendReply(dst, binding []byte, seq int64, nonce string, reqDigest canon.Digest, state ReplyState, data []byte) ([]byte, error) {
	var err error
	dst = append(dst, `{"binding":`...)
	dst = append(dst, binding...)
	dst = append(dst, `,"data":`...)
	dst = append(dst, data...)
	dst = append(dst, `,"host_nonce":`...)
	if dst, err = canon.AppendString(dst, nonce); err != nil {
		return dst, err
	}
	dst = append(dst, `,"protocol_version":1,"request_digest":`...)
	if dst, err = canon.AppendString(dst, string(reqDigest)); err != nil {
		return dst, err
	}
	dst = append(dst, `,"sequence":`...)
	dst = strconv.AppendInt(dst, seq, 10)
	dst = append(dst, `,"state":`...)
	if dst, err = canon.AppendString(dst, string(state)); err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}
