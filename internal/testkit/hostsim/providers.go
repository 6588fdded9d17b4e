package hostsim

import (
	"context"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ipc"
)

// Echo is the upstream conformance fixture example.echo@1.0.0: it answers
// {"text": arguments.text}.
func Echo() Provider {
	return func(_ context.Context, args map[string]any, _ *EffectPort) Outcome {
		return Outcome{Status: OutcomeSuccess, Response: map[string]any{"text": args["text"]}}
	}
}

// DemoConnectorRevision is the connector revision the recorded demo provider
// uses.
const DemoConnectorRevision canon.Digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"

// TwoEffects is the recorded demo capability example.two_effects@1.0.0: it
// requests effect-1 ("prepare") and effect-2 ("commit") on connection-a
// with {"step": n, "target": target}, and answers {"receipts": [the two
// receipt ids], "target": target}. An effect error ends it with failed
// ZEO_DEMO_EFFECT_FAILED.
func TwoEffects() Provider {
	return func(ctx context.Context, args map[string]any, effects *EffectPort) Outcome {
		var receipts []any
		for i, op := range []string{"prepare", "commit"} {
			id := []string{"effect-1", "effect-2"}[i]
			data, err := effects.Request(ctx, ipc.EffectRequest{
				LogicalEffectID: id, ConnectionRef: "connection-a", ConnectorRevision: DemoConnectorRevision,
				Operation: op, Arguments: map[string]any{"step": int64(i + 1), "target": args["target"]},
			})
			if err != nil {
				return Outcome{Status: OutcomeFailed, ErrorCode: "ZEO_DEMO_EFFECT_FAILED"}
			}
			receipts = append(receipts, data["receipt_id"])
		}
		return Outcome{Status: OutcomeSuccess, Response: map[string]any{"receipts": receipts, "target": args["target"]}}
	}
}

// Redeliver is example.redeliver@1.0.0: it requests effect-1 ("prepare")
// on connection-a with {"step": 1, "target": target}, then the very same
// request again, which the host re-sends as a redelivery, and answers
// {"receipts": [both receipt ids], "target": target}. An effect error ends
// it with failed ZEO_DEMO_EFFECT_FAILED.
func Redeliver() Provider {
	return func(ctx context.Context, args map[string]any, effects *EffectPort) Outcome {
		var receipts []any
		for range 2 {
			data, err := effects.Request(ctx, ipc.EffectRequest{
				LogicalEffectID: "effect-1", ConnectionRef: "connection-a", ConnectorRevision: DemoConnectorRevision,
				Operation: "prepare", Arguments: map[string]any{"step": int64(1), "target": args["target"]},
			})
			if err != nil {
				return Outcome{Status: OutcomeFailed, ErrorCode: "ZEO_DEMO_EFFECT_FAILED"}
			}
			receipts = append(receipts, data["receipt_id"])
		}
		return Outcome{Status: OutcomeSuccess, Response: map[string]any{"receipts": receipts, "target": args["target"]}}
	}
}

// Effects requests each effect in order and then succeeds with response;
// the first effect error ends it with failed and errorCode.
func Effects(reqs []ipc.EffectRequest, response map[string]any, errorCode string) Provider {
	return func(ctx context.Context, _ map[string]any, effects *EffectPort) Outcome {
		for _, req := range reqs {
			if _, err := effects.Request(ctx, req); err != nil {
				return Outcome{Status: OutcomeFailed, ErrorCode: errorCode}
			}
		}
		return Outcome{Status: OutcomeSuccess, Response: response}
	}
}
