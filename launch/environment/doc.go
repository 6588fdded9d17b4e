// Package environment verifies provider environments for the launcher:
// DigestTree computes the environment_digest of a directory tree (a
// virtual environment or install prefix) when a binding is written, and
// TreeVerifier, a launch.EnvironmentVerifier, checks it again before every
// launch, refusing a changed tree with launch.ErrEnvironmentMismatch. Trust
// skips the check, visibly, where the environment is verified by other
// means.
package environment
