package ipc

import "github.com/zeoruntime/runtimeipc/canon"

// Exchange records one answered request.
type Exchange struct {
	Sequence      int64
	Method        Method
	RequestDigest canon.Digest
	State         ReplyState
	RequestBytes  int // request body length
	ReplyBytes    int // reply body length
}

// MaxSummaryExchanges bounds [Summary.Exchanges]. A host may send any
// number of effect redeliveries within its deadline; the summary's memory
// must not grow with them.
const MaxSummaryExchanges = 1024

// Summary describes what a Session saw. Frames counts complete request
// frames read, including one that broke a rule; Exchanges lists the first
// MaxSummaryExchanges requests answered, in order, and DroppedExchanges
// counts the answered requests after those; Methods and States count every
// answered request by method and by reply state. Published reports that
// a result.publish was answered allowed, wherever it fell in the list.
// HostNonce is the nonce fixed at bootstrap ("" before).
type Summary struct {
	Frames           int
	Methods          map[Method]int
	States           map[ReplyState]int
	Exchanges        []Exchange
	DroppedExchanges int
	Published        bool
	HostNonce        string
}
