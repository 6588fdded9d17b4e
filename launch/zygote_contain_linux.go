package launch

import "fmt"

// warmContainable refuses a zygote for a Launcher that contains its
// hosts: the fork server's children are forked by the server, not started
// through the containment init, and a warm host must never run with less
// containment than a cold one (doc/design.md, “Containment”).
func (l *Launcher) warmContainable() error {
	if l.contain == nil {
		return nil
	}
	return fmt.Errorf("%w: warm launch (a zygote's children) cannot be contained yet; launch cold, or set Containment.Off to AllLayers for warm hosts (%s)",
		ErrContainmentUnavailable, l.contain.on)
}
