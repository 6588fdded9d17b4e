//go:build !linux

package launch

import "github.com/zeoruntime/runtimeipc/launch/contain"

// checkUserAccess is New's check of Config.User's access to Interpreter
// and Dir (see contain.UserAccessError); only Linux makes it.
func checkUserAccess(contain.User, string, string) error { return nil }
