package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
	pb "github.com/zeoruntime/runtimeipc/capabilityruntime/capabilityruntimev1"
	"github.com/zeoruntime/runtimeipc/capabilityruntime/process"
)

// capParams is the payload of every capabilityruntime row: a small request
// as a capability would get (about 200 bytes of JSON).
func capParams() map[string]any {
	return map[string]any{
		"owner": "zeoruntime", "repo": "runtimeipc", "issue": 15, "include_comments": true,
		"labels": []any{"backend", "grpc", "pool"},
		"page":   map[string]any{"size": 50, "cursor": "b64:c2Vjb25kLXBhZ2U="},
	}
}

// capParamsProto is capParams as the gRPC message carries it, built once:
// the raw peer sends it as is, with no conversion.
func capParamsProto() map[string]*pb.Value {
	str := func(s string) *pb.Value { return &pb.Value{Kind: &pb.Value_StringValue{StringValue: s}} }
	num := func(f float64) *pb.Value { return &pb.Value{Kind: &pb.Value_NumberValue{NumberValue: f}} }
	return map[string]*pb.Value{
		"owner": str("zeoruntime"), "repo": str("runtimeipc"), "issue": num(15),
		"include_comments": {Kind: &pb.Value_BoolValue{BoolValue: true}},
		"labels":           {Kind: &pb.Value_ListValue{ListValue: &pb.ListValue{Values: []*pb.Value{str("backend"), str("grpc"), str("pool")}}}},
		"page": {Kind: &pb.Value_StructValue{StructValue: &pb.Struct{Fields: map[string]*pb.Value{
			"size": num(50), "cursor": str("b64:c2Vjb25kLXBhZ2U="),
		}}}},
	}
}

// rawWorker is the capecho binary started by hand as a gRPC worker, with a
// plain gRPC client: the peer of a pooled Execute.
type rawWorker struct {
	cmd    *exec.Cmd
	conn   *grpc.ClientConn
	client pb.CapabilityRuntimeServiceClient
}

func startRawWorker(b *testing.B, bin string) *rawWorker {
	b.Helper()
	dir, err := os.MkdirTemp("", "capraw")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	sock, ready := filepath.Join(dir, "s.sock"), filepath.Join(dir, "ready")
	cmd := exec.Command(bin)
	cmd.Env = []string{capabilityruntime.EnvSocket + "=" + sock, capabilityruntime.EnvReady + "=" + ready}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			b.Fatal("raw worker never ready")
		}
	}
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	w := &rawWorker{cmd: cmd, conn: conn, client: pb.NewCapabilityRuntimeServiceClient(conn)}
	if _, err := w.client.Initialize(context.Background(), &pb.InitializeRequest{ProtocolVersion: capabilityruntime.ProtocolV1}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		w.client.Shutdown(context.Background(), &pb.ShutdownRequest{TimeoutMs: 1000})
		w.conn.Close()
		w.cmd.Wait()
	})
	return w
}

// call makes one unary Execute with a deadline, as the pool does.
func (w *rawWorker) call(b *testing.B, req *pb.ExecuteRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := w.client.Execute(ctx, req)
	if err != nil || len(resp.GetResult()) != len(req.GetParams()) {
		b.Fatalf("raw Execute: %v, %v", resp, err)
	}
}

func executeOnce(b *testing.B, inst capabilityruntime.BackendInstance, params map[string]any) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := inst.Execute(ctx, &capabilityruntime.Request{Params: params})
	if err != nil || len(resp.Result) != len(params) {
		b.Fatalf("Execute: %v, %v", resp, err)
	}
}

// bareExecJSON runs bin as a one-shot runtime by hand: the request on stdin,
// the response read from stdout, nothing else.
func bareExecJSON(b *testing.B, bin, dir string, body []byte) {
	cmd := exec.Command(bin)
	cmd.Env = []string{}
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(body)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		b.Fatal(err)
	}
	var resp capabilityruntime.Response
	if err := json.Unmarshal(out.Bytes(), &resp); err != nil || len(resp.Result) != len(capParams()) {
		b.Fatalf("bare exec answered %q: %v", out.Bytes(), err)
	}
}

// BenchmarkCapabilityRuntime measures the process backend against the floor
// of each protocol, with the same runtime binary (bench/capecho, built
// -trimpath, CGO_ENABLED=0) and the same payload:
//
//   - Execute: one call on a warm pooled gRPC worker (lease, params
//     conversion, the RPC with deadline and ids, result conversion, return);
//   - RawGRPC: one unary Execute with a prebuilt message on a plain gRPC
//     client of the same binary started by hand: the protocol's floor;
//   - OneShot: one call under the JSON protocol (a process per call);
//   - BareExec: exec of the same binary with the same stdin, its stdout
//     read and decoded: the floor any one-shot launcher pays;
//   - ColdStart: Start, the first Execute (the worker is started: ready
//     file, Initialize), Close; ready-ns/op is start to the first answer;
//   - PairedGRPC: one Execute and one RawGRPC in every iteration, with their
//     ratio x-raw-grpc; PairedOneShot: one OneShot and one BareExec, with
//     x-bare-exec. The rows above run one after another for a second or
//     more each, and the load of a shared machine drifts between them; the
//     paired ratios are of runs interleaved within microseconds.
func BenchmarkCapabilityRuntime(b *testing.B) {
	dir := b.TempDir()
	bin := buildTool(b, dir, "capecho", "./capecho", false)
	tmp, err := os.MkdirTemp("", "capbench")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	backend, err := process.New(process.Config{TempDir: tmp})
	if err != nil {
		b.Fatal(err)
	}
	defer backend.Close(context.Background())
	spec := func(protocol string) capabilityruntime.BackendSpec {
		return capabilityruntime.BackendSpec{Type: "bench:capecho", Version: "1.0.0", Protocol: protocol, Entrypoint: bin, RootDir: dir}
	}
	pooled, err := backend.Start(context.Background(), spec(capabilityruntime.ProtocolV1))
	if err != nil {
		b.Fatal(err)
	}
	defer pooled.Close(context.Background())
	oneShot, err := backend.Start(context.Background(), spec(capabilityruntime.ProtocolJSONV1))
	if err != nil {
		b.Fatal(err)
	}
	defer oneShot.Close(context.Background())
	raw := startRawWorker(b, bin)
	params := capParams()
	rawReq := &pb.ExecuteRequest{ExecutionId: "0123456789abcdef0123456789abcdef", Params: capParamsProto(), TimeoutMs: 60000}
	body, err := json.Marshal(capabilityruntime.Request{Params: params})
	if err != nil {
		b.Fatal(err)
	}
	executeOnce(b, pooled, params) // warm

	rows := map[string]func(){
		"Execute":  func() { executeOnce(b, pooled, params) },
		"RawGRPC":  func() { raw.call(b, rawReq) },
		"OneShot":  func() { executeOnce(b, oneShot, params) },
		"BareExec": func() { bareExecJSON(b, bin, dir, body) },
	}
	for _, name := range []string{"Execute", "RawGRPC", "OneShot", "BareExec"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rows[name]()
			}
		})
	}

	b.Run("ColdStart", func(b *testing.B) {
		// A type of its own, so that every iteration gets a fresh pool.
		s := spec(capabilityruntime.ProtocolV1)
		s.Type = "bench:cold"
		var ready time.Duration
		for b.Loop() {
			t0 := time.Now()
			inst, err := backend.Start(context.Background(), s)
			if err != nil {
				b.Fatal(err)
			}
			executeOnce(b, inst, params)
			ready += time.Since(t0)
			if err := inst.Close(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(ready.Nanoseconds())/float64(b.N), "ready-ns/op")
	})

	// Each pair runs its two rows in turn, the first of them alternating
	// between iterations, so that neither always follows the other.
	paired := func(name, first, second, ratio string) {
		b.Run(name, func(b *testing.B) {
			var total [2]time.Duration
			run := func(i int, row string) {
				t0 := time.Now()
				rows[row]()
				total[i] += time.Since(t0)
			}
			odd := false
			for b.Loop() {
				if odd {
					run(1, second)
					run(0, first)
				} else {
					run(0, first)
					run(1, second)
				}
				odd = !odd
			}
			b.ReportMetric(float64(total[0].Nanoseconds())/float64(b.N), first+"-ns/op")
			b.ReportMetric(float64(total[1].Nanoseconds())/float64(b.N), second+"-ns/op")
			b.ReportMetric(float64(total[0])/float64(total[1]), ratio)
		})
	}
	paired("PairedGRPC", "Execute", "RawGRPC", "x-raw-grpc")
	paired("PairedOneShot", "OneShot", "BareExec", "x-bare-exec")
}
