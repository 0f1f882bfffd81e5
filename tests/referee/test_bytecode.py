"""The bytecode the referee writes for the Python its sandboxed bots import.

A sandboxed bot cannot write ``__pycache__`` (its folders are read-only, and its environment
says PYTHONDONTWRITEBYTECODE), so without this every start compiles our packages again.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from referee.bots.bytecode import cached_path, is_current, write_bytecode
from referee.bots.sandbox import SandboxConfig, own_package_folders, probe, sandboxed_command


def package(root: Path) -> Path:
    """A package ``pkgx`` of two modules (and a Node bot's packages, never compiled) under ``root``."""
    pkg = root / "pkgx"
    (pkg / "node_modules" / "dep").mkdir(parents=True)
    (pkg / "__init__.py").write_text("VALUE = 1\n")
    (pkg / "mod.py").write_text("from pkgx import VALUE\nTWICE = 2 * VALUE\n")
    (pkg / "node_modules" / "dep" / "x.py").write_text("Y = 1\n")
    return pkg


def test_writes_what_is_missing_then_only_what_changed(tmp_path: Path) -> None:
    pkg = package(tmp_path)
    first = write_bytecode([str(pkg)])
    assert (first.current, first.written, first.failed) == (0, 2, 0)
    for name in ("__init__.py", "mod.py"):
        assert is_current(str(pkg / name), cached_path(str(pkg / name)))
    assert not (pkg / "node_modules" / "dep" / "__pycache__").exists()
    assert write_bytecode([str(pkg)]) == type(first)(2, 0, 0)

    # A source edited since (another size, and a time the old bytecode does not hold).
    (pkg / "mod.py").write_text("from pkgx import VALUE\nTWICE = VALUE + VALUE\n")
    st = os.stat(pkg / "mod.py")
    os.utime(pkg / "mod.py", ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    assert not is_current(str(pkg / "mod.py"), cached_path(str(pkg / "mod.py")))
    assert write_bytecode([str(pkg)]) == type(first)(1, 1, 0)
    assert is_current(str(pkg / "mod.py"), cached_path(str(pkg / "mod.py")))


def test_a_source_that_does_not_compile_or_a_folder_it_may_not_write_is_left(tmp_path: Path) -> None:
    pkg = package(tmp_path)
    (pkg / "broken.py").write_text("def (:\n")
    got = write_bytecode([str(pkg)])
    assert (got.written, got.failed) == (2, 1)
    assert not os.path.exists(cached_path(str(pkg / "broken.py")))

    other = package(tmp_path / "ro")
    other.chmod(0o555)
    try:
        if os.access(other, os.W_OK):  # root writes anywhere: a file in the way stands for it
            other.chmod(0o755)
            (other / "__pycache__").write_text("not a folder\n")
        got = write_bytecode([str(other)])
    finally:
        other.chmod(0o755)
    assert (got.current, got.written, got.failed) == (0, 0, 2)


def test_bytecode_of_another_interpreter_or_kind_is_not_current(tmp_path: Path) -> None:
    pkg = package(tmp_path)
    write_bytecode([str(pkg)])
    cached = Path(cached_path(str(pkg / "mod.py")))
    data = cached.read_bytes()
    cached.write_bytes(b"\0\0\r\n" + data[4:])  # another version's magic number
    assert not is_current(str(pkg / "mod.py"), str(cached))
    cached.write_bytes(data[:4] + b"\3\0\0\0" + data[8:])  # checked by hash, not by time
    assert not is_current(str(pkg / "mod.py"), str(cached))
    cached.write_bytes(data[:10])
    assert not is_current(str(pkg / "mod.py"), str(cached))
    assert not is_current(str(pkg / "gone.py"), str(cached))


@pytest.mark.skipif(not probe().available, reason=f"no sandbox on this machine: {probe().reason}")
def test_a_sandboxed_interpreter_imports_the_bytecode_written(tmp_path: Path) -> None:
    """What the bytecode is for: a bot in its sandbox, where nothing may be written, loads it
    rather than compiling the source (``python -v`` names the bytecode that matches a source)."""
    tmp_path.chmod(0o755)  # a bot's own folder is readable by every user (as root bots run as nobody)
    pkg = package(tmp_path)
    code = "import pkgx.mod; print(pkgx.mod.TWICE)"
    argv = sandboxed_command([sys.executable, "-v", "-c", code], cwd=str(tmp_path), socket_dir=str(tmp_path / "s"), config=SandboxConfig())

    def run() -> str:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and r.stdout.strip() == "2", r.stderr[-2000:]
        return r.stderr

    before = run()
    compiled = f"# code object from {pkg / 'mod.py'}\n"
    assert compiled in before  # compiled from the source, and nothing written
    assert not (pkg / "__pycache__").exists()
    write_bytecode([str(pkg)])
    after = run()
    assert f"{cached_path(str(pkg / 'mod.py'))} matches {pkg / 'mod.py'}" in after
    assert compiled not in after


@pytest.mark.skipif(not probe().available, reason=f"no sandbox on this machine: {probe().reason}")
def test_the_probe_writes_the_bytecode_of_our_packages() -> None:
    folders = own_package_folders()
    assert {os.path.basename(f) for f in folders} == {"referee", "sdk", "sample_bots", "thirtyone"}
    writable = [f for f in folders if os.access(f, os.W_OK)]
    if not writable:
        pytest.skip("this checkout's packages are read-only: the probe leaves them as they are")
    for f in writable:
        # Removed first, so that only the probe can have written it. (An unlink: a bot of
        # another test reading it meanwhile keeps what it opened, or compiles the source.)
        init = os.path.join(f, "__init__.py")
        with contextlib.suppress(FileNotFoundError):
            os.remove(cached_path(init))
        assert not is_current(init, cached_path(init))
    probe.cache_clear()
    try:
        assert probe().available
    finally:
        probe.cache_clear()
    for f in writable:
        init = os.path.join(f, "__init__.py")
        assert is_current(init, cached_path(init)), init
