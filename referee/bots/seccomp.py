"""The system calls a sandboxed bot may not make: a seccomp filter, built by libseccomp.

A bot plays cards over a socket. It never needs to trace another process, make namespaces,
mount file systems, use the kernel's keyrings, load BPF programs or open perf events; and
each of those is a way out of, or around, its sandbox: a bot that may ``ptrace`` its
sandbox's first process (bubblewrap's init, the same user in the same user namespace) can
make it forget that it must die with the referee, and a bot that may make a user namespace
of its own may mount a tmpfs past its scratch folder's cap. So every sandboxed bot runs
under this filter (bubblewrap loads it, ``--seccomp FD``, just before it runs the bot's
command; bubblewrap's own init is not filtered and needs nothing of it).

The filter allows everything but :data:`DENIED`, which fail with ``EPERM``, and
:data:`UNSUPPORTED`, which fail with ``ENOSYS`` as on a kernel that lacks them, so that a
runtime falls back to what it used before they existed (glibc's threads to ``clone``,
libuv's file I/O to a thread pool). ``clone`` is refused only with a namespace flag (a new
thread or process is fine). A 32-bit program on a 64-bit machine (``int 0x80`` on x86_64)
meets the same filter: the compatible architecture is added where libseccomp knows it.

The filter is made by libseccomp, the library behind the filters of systemd, Flatpak, Docker
and Podman, through its ctypes bindings ``pyseccomp`` (see ``pyproject.toml``), and exported
as BPF once per process: never hand-written BPF. Where it cannot be built (no
``libseccomp.so.2``) the sandbox is unavailable, as without bubblewrap, and ``thirtyone
doctor`` says why.
"""

from __future__ import annotations

import errno
import functools
import os
import platform
import tempfile
from dataclasses import dataclass

from referee.faults import RefereeError

#: What the filter refuses with EPERM, by purpose (what ``thirtyone doctor`` and the docs list).
DENIED: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("tracing other processes", ("ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp")),
    ("new namespaces", ("unshare", "setns")),
    ("mounts", (
        "mount", "umount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount", "fspick",
        "move_mount", "open_tree", "mount_setattr",
    )),
    ("kernel keyrings", ("keyctl", "add_key", "request_key")),
    ("BPF, perf and userfaultfd", ("bpf", "perf_event_open", "userfaultfd")),
    ("the kernel itself", (
        "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot", "swapon",
        "swapoff", "acct", "quotactl", "quotactl_fd", "syslog", "open_by_handle_at", "name_to_handle_at",
        "lookup_dcookie", "uselib", "nfsservctl", "vm86", "vm86old",
    )),
)  # fmt: skip
#: What the filter answers with ENOSYS: newer calls a runtime tries first and falls back
#: from. ``clone3`` passes its flags in memory, which a filter cannot read; ``io_uring`` is a
#: second way to make most system calls, around this filter.
UNSUPPORTED = ("clone3", "io_uring_setup", "io_uring_enter", "io_uring_register")
#: ``clone``'s namespace flags: a ``clone`` with any of them is refused (EPERM).
CLONE_NAMESPACE_FLAGS = {
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}
#: ``ioctl`` requests refused: pushing characters into a terminal's input (TIOCSTI) and the
#: Linux console's multiplexer (TIOCLINUX).
DENIED_IOCTLS = {"TIOCSTI": 0x5412, "TIOCLINUX": 0x541C}

#: The compatible (32-bit) architecture of each 64-bit one, by ``platform.machine()``.
_COMPAT = {"x86_64": "X86", "aarch64": "ARM"}


class FilterError(RefereeError, RuntimeError):
    """The filter cannot be built here; says why."""


@dataclass(frozen=True, slots=True)
class SyscallFilter:
    """The filter, exported as BPF, and what it holds."""

    #: The BPF program, as bubblewrap's ``--seccomp FD`` reads it.
    bpf: bytes
    #: The architectures it covers (``x86_64``, and ``X86`` for 32-bit programs).
    architectures: tuple[str, ...]
    #: Names of :data:`DENIED` and :data:`UNSUPPORTED` that this libseccomp does not know
    #: (calls newer than it, or of other architectures): not in the filter.
    unknown: tuple[str, ...]

    def describe(self) -> str:
        """One line for ``thirtyone doctor``: what is refused."""
        groups = "; ".join(f"{what} ({', '.join(n for n in names if n not in self.unknown)})" for what, names in DENIED)
        flags = "/".join(f.removeprefix("CLONE_") for f in CLONE_NAMESPACE_FLAGS)
        return (
            f"seccomp (libseccomp, {'+'.join(self.architectures)}): EPERM for {groups}; clone with {flags}; "
            f"ioctl {', '.join(DENIED_IOCTLS)}. ENOSYS for {', '.join(n for n in UNSUPPORTED if n not in self.unknown)}"
        )


@functools.cache
def build() -> SyscallFilter:
    """The filter, built once per process; raises :class:`FilterError` saying why it cannot be."""
    try:
        import pyseccomp as sc  # type: ignore[import-untyped]  # no stubs: a thin ctypes layer
    except ImportError as e:
        raise FilterError(f"the Python package pyseccomp is not installed ({e}); pip install pyseccomp") from None
    except (OSError, RuntimeError) as e:  # pyseccomp raises RuntimeError without libseccomp.so.2
        raise FilterError(
            f"libseccomp cannot be loaded ({e}); install it (Debian/Ubuntu: apt-get install libseccomp2; "
            "Fedora: dnf install libseccomp)"
        ) from None
    machine = platform.machine()
    unknown: list[str] = []
    try:
        f = sc.SyscallFilter(sc.ALLOW)
        arches = [machine]
        compat = _COMPAT.get(machine)
        if compat is not None:
            try:
                f.add_arch(getattr(sc.Arch, compat))
                arches.append(compat)
            except OSError:
                pass  # a libseccomp without it: 32-bit calls then meet the bad-architecture kill
        # Another architecture's system calls (x32's on x86_64, or one not added) end the
        # process: a bot never makes them, and a filter for one ABI says nothing of another.
        f.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)

        def rule(action: int, name: str, *args: object) -> None:
            # A negative number other than -1 is libseccomp's name for a call that exists on
            # some of the filter's architectures only (umount on x86 but not x86_64): it is
            # added where it exists.
            nr = sc.resolve_syscall(sc.Arch.NATIVE, name)
            if nr == -1:
                unknown.append(name)
                return
            try:
                f.add_rule(action, name, *args)
            except OSError:
                if nr >= 0:
                    raise
                unknown.append(name)  # a call of none of the filter's architectures

        for _, names in DENIED:
            for name in names:
                rule(sc.ERRNO(errno.EPERM), name)
        for name in UNSUPPORTED:
            rule(sc.ERRNO(errno.ENOSYS), name)
        # clone's flags are its first argument, except on s390, where they are its second.
        flags_at = 1 if machine.startswith("s390") else 0
        for bit in CLONE_NAMESPACE_FLAGS.values():
            rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(flags_at, sc.MASKED_EQ, bit, bit))
        for request in DENIED_IOCTLS.values():
            rule(sc.ERRNO(errno.EPERM), "ioctl", sc.Arg(1, sc.MASKED_EQ, 0xFFFFFFFF, request))
        with tempfile.TemporaryFile() as out:
            f.export_bpf(out)
            out.seek(0)
            bpf = out.read()
    except OSError as e:
        raise FilterError(f"libseccomp could not build the filter: {e}") from None
    if not bpf:
        raise FilterError("libseccomp exported an empty filter")
    return SyscallFilter(bpf, tuple(arches), tuple(unknown))


def status() -> tuple[SyscallFilter | None, str]:
    """The filter, or None and why it cannot be built here."""
    try:
        return build(), ""
    except FilterError as e:
        return None, str(e)


def filter_fd() -> int:
    """A descriptor to read the filter from, for bubblewrap's ``--seccomp FD`` (the caller
    passes it to bubblewrap and closes it). A pipe, new for each bot: bubblewrap reads it to
    its end, and a file shared between bots started at once would share its offset."""
    bpf = build().bpf
    r, w = os.pipe()
    try:
        # A filter is a few hundred bytes, far below a pipe's buffer: this never blocks.
        os.write(w, bpf)
    except BaseException:
        os.close(r)
        raise
    finally:
        os.close(w)
    return r
