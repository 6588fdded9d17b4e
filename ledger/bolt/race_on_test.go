//go:build race

package bolt_test

// raceEnabled: the race detector slows every flip of the bit-flip
// campaign several times over, so under it the campaign takes every
// flipStride-th byte (see TestBitFlipCampaign).
const raceEnabled = true
