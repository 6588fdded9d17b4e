package containinit

import "golang.org/x/sys/unix"

const (
	seccompAuditArch = unix.AUDIT_ARCH_AARCH64
	seccompX32Bit    = 0 // no such block here
)

var seccompNumbers = map[string]uint32{
	"ptrace": unix.SYS_PTRACE, "process_vm_readv": unix.SYS_PROCESS_VM_READV, "process_vm_writev": unix.SYS_PROCESS_VM_WRITEV,
	"mount": unix.SYS_MOUNT, "umount2": unix.SYS_UMOUNT2, "pivot_root": unix.SYS_PIVOT_ROOT, "chroot": unix.SYS_CHROOT,
	"mount_setattr": unix.SYS_MOUNT_SETATTR, "move_mount": unix.SYS_MOVE_MOUNT, "open_tree": unix.SYS_OPEN_TREE,
	"fsopen": unix.SYS_FSOPEN, "fsconfig": unix.SYS_FSCONFIG, "fsmount": unix.SYS_FSMOUNT, "fspick": unix.SYS_FSPICK,
	"unshare": unix.SYS_UNSHARE, "setns": unix.SYS_SETNS, "bpf": unix.SYS_BPF, "keyctl": unix.SYS_KEYCTL,
	"add_key": unix.SYS_ADD_KEY, "request_key": unix.SYS_REQUEST_KEY, "init_module": unix.SYS_INIT_MODULE,
	"finit_module": unix.SYS_FINIT_MODULE, "delete_module": unix.SYS_DELETE_MODULE, "kexec_load": unix.SYS_KEXEC_LOAD,
	"kexec_file_load": unix.SYS_KEXEC_FILE_LOAD, "reboot": unix.SYS_REBOOT, "swapon": unix.SYS_SWAPON,
	"swapoff": unix.SYS_SWAPOFF, "quotactl": unix.SYS_QUOTACTL, "perf_event_open": unix.SYS_PERF_EVENT_OPEN,
	"userfaultfd": unix.SYS_USERFAULTFD, "open_by_handle_at": unix.SYS_OPEN_BY_HANDLE_AT, "acct": unix.SYS_ACCT,
	// The socket filter's (SocketFilter).
	"socket": unix.SYS_SOCKET, "io_uring_setup": unix.SYS_IO_URING_SETUP, "io_uring_enter": unix.SYS_IO_URING_ENTER,
	"io_uring_register": unix.SYS_IO_URING_REGISTER,
}
