package ipc

import "github.com/zeoruntime/runtimeipc/canon"

// DecodeRequestFast runs the Session's decoder, which takes the fast path
// for canonical requests carrying binding b.
func DecodeRequestFast(body []byte, max int, b AttemptBinding) (*Request, canon.Digest, error) {
	raw, err := canon.Marshal(b)
	if err != nil {
		return nil, "", err
	}
	return decodeRequest(body, max, &knownBinding{raw: raw, b: b})
}
