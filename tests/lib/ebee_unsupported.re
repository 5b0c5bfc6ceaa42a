# The refusals of ebee that say this kernel cannot run a path or attach method, one POSIX
# extended regular expression a line ('#' lines and empty lines aside). A test that meets
# one of them says SKIP and why; any other error of ebee's fails it. Read by the shell
# tests (tests/lib/ebee_unsupported.sh: grep -E) and the C ones (tu_ebee_unsupported in
# tests/lib/ebee_unsupported.c: regcomp); tests/unit/test_attach.c checks that these are
# what metrics/src/attach.c says for the kernels it knows, and that an attach failure is
# not among them.
#
# The socket path, forced to tp_btf on a kernel before 6.3 (Debian 12's 6.1):
ebee: the kernel has no sock:[a-z_]+ tracepoint \(added in Linux 6\.3\); use --attach auto \(fentry\) or the syscall path
# forced to fentry where the kernel refuses BPF trampolines (lockdown: EPERM; a kernel
# built without them: ENOTSUPP, 524) or its BTF lacks the function:
ebee: --attach fentry: fentry/fexit programs are refused \((Operation not permitted: kernel lockdown\?|Unknown error 524)\); use --attach auto
ebee: --attach fentry: the kernel's BTF has no [a-z0-9_]+ for fentry/fexit; use --attach auto
# neither of them (6.1 under lockdown): the socket path cannot run at all
ebee: the kernel has no sock:[a-z_]+ tracepoint \(added in Linux 6\.3\) and (fentry/fexit programs are refused \((Operation not permitted: kernel lockdown\?|Unknown error 524)\)|the kernel's BTF has no [a-z0-9_]+ for fentry/fexit): the socket path needs one of them
ebee: the kernel has no sock:inet_sock_set_state tracepoint \(Linux >= 4\.16\); use the syscall path
# the syscall path on a kernel without syscall tracepoints or BPF task storage
ebee: the kernel has no syscall tracepoints \(.*\); it needs CONFIG_FTRACE_SYSCALLS=y
ebee: the kernel has no BPF task storage \(BPF_MAP_TYPE_TASK_STORAGE for tracepoint programs needs Linux >= 5\.12\)
