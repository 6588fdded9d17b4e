package containinit

// SeccompDenied returns the system calls the filter denies with EPERM
// (contain.SeccompDenied documents them).
func SeccompDenied() []string {
	return []string{"ptrace", "process_vm_readv", "process_vm_writev", "mount", "umount2",
		"pivot_root", "chroot", "mount_setattr", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount",
		"fspick", "unshare", "setns", "bpf", "keyctl", "add_key", "request_key", "init_module",
		"finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff",
		"quotactl", "perf_event_open", "userfaultfd", "open_by_handle_at", "acct", "iopl", "ioperm"}
}
