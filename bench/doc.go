// Package bench holds side-by-side benchmarks of runtimeipc against its
// peers (gowebpki/jcs, cyberphone's reference canonicalizer,
// hashicorp/go-plugin, raw bbolt). It is a separate module so that the peers
// never enter the main module's dependency graph. See BENCHMARKS.md at the
// repository root for the latest numbers and the command that reproduces them.
package bench
