// Package capabilityruntimev1 is the generated Go code of the capability
// runtime gRPC protocol, neuron/capability-runtime-v1 (proto package
// neuron.capability_runtime.v1): the messages and the
// CapabilityRuntimeService client and server (see doc/capabilityruntime.md,
// “The gRPC protocol”).
//
// Most programs need neither side directly: the process backend is the
// client and the serve package is the server. The package is exported for
// runtimes that implement the service themselves and for tools that talk to
// a worker without the pool.
//
// The .pb.go files are generated (protoc 3.21.12, protoc-gen-go v1.36.12,
// protoc-gen-go-grpc v1.6.2); regenerate them with go generate after editing
// capability_runtime.proto, with the three tools on PATH. Nothing in the
// build needs protoc.
package capabilityruntimev1

//go:generate protoc --proto_path=. --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative capability_runtime.proto
