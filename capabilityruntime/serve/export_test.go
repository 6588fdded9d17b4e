package serve

import (
	"encoding/json"
)

// decodeAny re-encodes a JSON document with sorted keys, for comparisons.
func decodeAny(s string) (string, error) {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return "", err
	}
	b, err := json.Marshal(v)
	return string(b), err
}
