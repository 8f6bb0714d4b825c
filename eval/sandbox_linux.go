//go:build linux

package eval

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/net/bpf"
)

// sandboxDir is where a case's folder appears inside the sandbox.
const sandboxDir = "/case"

// sandbox runs a test program under bubblewrap (bwrap(1)): new user, mount,
// pid, network, ipc, uts and cgroup namespaces; a root that holds only a
// read-only bind of /usr (with the /bin, /lib, /lib64, /sbin links or binds
// of the host) and of the interpreter's own folders, a fresh /proc of the
// sandbox's pid namespace, a minimal /dev, a 64 MiB tmpfs /tmp and the case's
// folder at /case, the only writable folder; the root itself is read-only.
// The environment is emptied (LANG, PATH, HOME, TMPDIR are set), the program
// runs in a new session as uid/gid 65534 with no capabilities and under a
// seccomp filter (sandboxSyscalls fail with EPERM). It dies with its parent.
type sandbox struct {
	bwrap  string
	binds  []string // read-only folders beside /usr: the interpreter's prefixes
	userNS bool     // a user namespace could be made (false only as root, when the kernel refuses one)
	filter []byte   // the seccomp program as struct sock_filter[], for bwrap --seccomp
}

// sandboxSyscalls fail with EPERM inside the sandbox: every socket (so no
// network, not even the sandbox's own loopback, and no Unix socket), io_uring
// (whose operations pass beside seccomp), tracing and reading other
// processes, namespaces and mounts, kernel keys, modules, BPF, perf and
// userfaultfd, and the host-wide switches.
var sandboxSyscalls = []string{
	"socket", "socketpair", "io_uring_setup", "io_uring_enter", "io_uring_register",
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	"unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsmount", "fsconfig", "fspick",
	"keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
	"reboot", "swapon", "swapoff", "acct", "quotactl", "iopl", "ioperm",
	"open_by_handle_at", "name_to_handle_at", "settimeofday", "clock_settime", "adjtimex", "syslog",
}

// seccompProgram assembles sandboxSyscalls into the raw BPF program bwrap
// loads (struct sock_filter: u16 code, u8 jt, u8 jf, u32 k, native order).
func seccompProgram() ([]byte, error) {
	policy := seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls:      []seccomp.SyscallGroup{{Action: seccomp.ActionErrno, Names: sandboxSyscalls}},
	}
	insts, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("seccomp filter: %w", err)
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return nil, fmt.Errorf("seccomp filter: %w", err)
	}
	var b bytes.Buffer
	for _, r := range raw {
		_ = binary.Write(&b, binary.NativeEndian, struct {
			Op     uint16
			Jt, Jf uint8
			K      uint32
		}{r.Op, r.Jt, r.Jf, r.K})
	}
	return b.Bytes(), nil
}

// newSandbox finds bwrap, works out what the interpreter python needs and
// checks, by running python inside, that this machine can make the sandbox.
// The error says why not (no bwrap, namespaces refused, ...): code graders
// are then refused, never run with less isolation.
func newSandbox(ctx context.Context, name, python string) (*sandbox, error) {
	if name == "" {
		return nil, errors.New("no sandbox configured (suite.code.bwrap is empty)")
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return nil, fmt.Errorf("bubblewrap %q not found (install the Debian package bubblewrap): %w", name, err)
	}
	filter, err := seccompProgram()
	if err != nil {
		return nil, err
	}
	s := &sandbox{bwrap: path, filter: filter, userNS: true}
	if s.binds, err = pythonFolders(ctx, python); err != nil {
		return nil, err
	}
	probe := func() error {
		dir, err := os.MkdirTemp("", "eval-code-probe-*")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
		defer cancel()
		cmd, done, err := s.command(pctx, dir, []string{python, "-I", "-c", "import os; assert os.getcwd() == '" + sandboxDir + "'"})
		if err != nil {
			return err
		}
		defer done()
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%w: %s", err, lastLines(out.String(), 3, 400))
		}
		return nil
	}
	err = probe()
	if err != nil && os.Geteuid() == 0 {
		// As root the other namespaces do not need a user namespace: a kernel
		// that refuses one still gets every other wall, with no capabilities.
		s.userNS = false
		if probe() == nil {
			return s, nil
		}
		s.userNS = true
	}
	if err != nil {
		return nil, fmt.Errorf("bubblewrap cannot make the sandbox here: %w", err)
	}
	return s, nil
}

// pythonFolders are the folders outside /usr the interpreter runs from
// (sys.prefix, sys.base_prefix, sys.exec_prefix and its executable's folder,
// e.g. a pyenv install), to be bound read-only.
func pythonFolders(ctx context.Context, python string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, python, "-I", "-c",
		"import os, sys; print('\\n'.join({sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, os.path.dirname(os.path.realpath(sys.executable))}))").Output()
	if err != nil {
		return nil, fmt.Errorf("asking %s for its folders: %w", python, err)
	}
	var dirs []string
	for _, d := range strings.Fields(string(out)) {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			d = real
		}
		if d == "/" || d == "/usr" || strings.HasPrefix(d, "/usr/") || !filepath.IsAbs(d) {
			continue
		}
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	return slices.Compact(dirs), nil
}

// command is the bwrap command that runs argv in the sandbox with dir as its
// writable /case; done closes the seccomp pipe after the command ends.
func (s *sandbox) command(ctx context.Context, dir string, argv []string) (*exec.Cmd, func(), error) {
	args := []string{"--die-with-parent", "--new-session", "--clearenv", "--cap-drop", "ALL",
		"--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try", "--disable-userns"}
	if s.userNS {
		args = append(args, "--unshare-user", "--uid", "65534", "--gid", "65534")
	} else {
		args = slices.DeleteFunc(args, func(a string) bool { return a == "--disable-userns" })
	}
	args = append(args, "--ro-bind", "/usr", "/usr")
	for _, l := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		fi, err := os.Lstat(l)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(l); err == nil {
				args = append(args, "--symlink", target, l)
			}
		case fi.IsDir():
			args = append(args, "--ro-bind", l, l)
		}
	}
	for _, d := range s.binds {
		args = append(args, "--ro-bind", d, d)
	}
	args = append(args, "--proc", "/proc", "--dev", "/dev", "--size", fmt.Sprint(64<<20), "--tmpfs", "/tmp",
		"--bind", dir, sandboxDir, "--remount-ro", "/", "--chdir", sandboxDir,
		"--setenv", "LANG", "C.UTF-8", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", sandboxDir, "--setenv", "TMPDIR", "/tmp",
		"--seccomp", "3", "--")
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("seccomp pipe: %w", err)
	}
	_, err = w.Write(s.filter) // far below a pipe's buffer
	w.Close()
	if err != nil {
		r.Close()
		return nil, nil, fmt.Errorf("seccomp pipe: %w", err)
	}
	cmd := exec.CommandContext(ctx, s.bwrap, append(args, argv...)...)
	cmd.ExtraFiles = []*os.File{r} // fd 3
	cmd.Env = []string{}
	return cmd, func() { r.Close() }, nil
}

// describe says what the sandbox is, for the start-up log.
func (s *sandbox) describe() string {
	d := "bubblewrap " + s.bwrap + ": user, mount, pid, network, ipc, uts namespaces; read-only /usr"
	if len(s.binds) > 0 {
		d += ", " + strings.Join(s.binds, ", ")
	}
	d += "; tmpfs /tmp; the case folder; seccomp (no sockets)"
	if !s.userNS {
		d = strings.Replace(d, "user, mount", "mount", 1) + "; no user namespace (the kernel refused one): uid 0 without capabilities"
	}
	return d
}
