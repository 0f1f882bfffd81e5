"""The sandbox's holes of issue 20, each attacked from inside by a real sandboxed process.

- a tournament bot whose command names host files sees none of them, and ``submit`` refuses
  such a command, saying why and what to do (``--dir``);
- everything a bot can write (its scratch, its socket's folder, ``/dev/shm``, any other
  writable mount) is one tmpfs capped at ``scratch_mb``: at the cap it gets ENOSPC, and the
  host's disk holds nothing of it;
- a bot that burns CPU in several processes gets about its share (``cpus``);
- the per-bot cgroups a killed referee leaves behind are removed by the next launcher;
- a bot that makes its socket a link to another socket on the host (a daemon's) does not
  make the referee connect there, before its first connection or after (a reconnection);
- the TLS keys of the machine (``/etc/ssl/private``) are not there, though its certificates are.

Each test skips only where this machine cannot sandbox (or, for cgroups, is not root).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import referee.cli.commands  # noqa: F401  (registers the commands)
from referee.bots import LocalLauncher, parse_bot_spec
from referee.bots.client import close_bots, start_bot, start_bots
from referee.bots.process import LocalBotProcess
from referee.bots.sandbox import BotCgroup, BotLimits, SandboxConfig, probe
from referee.cli.app import app
from referee.faults import BotStartError
from referee.match import MatchConfig, MatchOutcome, play_match
from referee.timecontrol import TimeControl
from referee.tournament.settings import TournamentSettings
from referee.tournament.store import TournamentStore
from referee.tournament.submit import SubmissionError, submit
from tests.polling import poll_until, poll_until_async
from tests.referee.conftest import run

pytestmark = pytest.mark.skipif(not probe().available, reason=f"no sandbox on this machine: {probe().reason}")
CGROUPS = pytest.mark.skipif(not probe().cgroups, reason="per-bot cgroups need root and mounted cgroups")

#: Reads every path it is given and says what it found (a bot's first act, no gRPC needed).
READER = textwrap.dedent(
    """
    import sys
    for path in sys.argv[1:]:
        try:
            with open(path) as f:
                print("READ", path, f.read().strip())
        except OSError as e:
            print("REFUSED", path, e.errno)
    """
)


def run_to_exit(launcher: LocalLauncher, command: str, cwd: Path, timeout_s: float = 60.0) -> tuple[str, LocalBotProcess]:
    """Launch ``command`` (run in ``cwd``) with ``launcher``, wait for it to exit, and return
    its output and process (stopped)."""

    async def go() -> tuple[str, LocalBotProcess]:
        process = await launcher.launch(parse_bot_spec(command, cwd=cwd))
        try:
            await poll_until_async(f"{command!r} to finish", lambda: process.exit_code() is not None, timeout_s=timeout_s)
            await process.output_closed(5.0)
            return process.output_tail(20000), process
        finally:
            await process.stop(0.5)

    return run(go())


def secret_file(tmp_path: Path) -> Path:
    """A private file (0600) in a folder of its own, standing for /etc/shadow or another
    tournament's settings."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    secret = folder / "notes.txt"
    secret.write_text("the seed is 12345\n")
    secret.chmod(0o600)
    return secret


def bot_folder(tmp_path: Path, name: str, source: str) -> Path:
    """A bot's folder holding one Python file."""
    folder = tmp_path / "bot"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(source)
    return folder


# ---------------------------------------------------------------- 1. command words


def test_a_tournament_bot_cannot_read_a_file_its_command_names(tmp_path: Path) -> None:
    """The launcher of a tournament (its settings' sandbox) binds the bot's own folder only:
    a file named on its command line, elsewhere on this machine, is not there."""
    secret = secret_file(tmp_path)
    bot = bot_folder(tmp_path, "reader.py", READER)
    folder = tmp_path / "t"
    config = TournamentSettings(sandbox="on").sandbox_config(folder)
    assert config is not None
    output, _ = run_to_exit(LocalLauncher(sandbox=config), f"{sys.executable} reader.py {secret} /etc/shadow", bot)
    assert "the seed is" not in output, output
    assert f"REFUSED {secret} 2" in output, output  # not even there
    assert "READ /etc/shadow" not in output, output


def test_thirtyone_match_keeps_the_convenience_for_ones_own_command(tmp_path: Path) -> None:
    """``command_files`` (what ``thirtyone match`` and ``check-bot`` use, for a command the
    person typed) binds the folder of a file the command names, read-only."""
    secret = secret_file(tmp_path)
    secret.chmod(0o644)  # readable by the user the bot runs as (as root: nobody)
    bot = bot_folder(tmp_path, "reader.py", READER)
    output, _ = run_to_exit(LocalLauncher(sandbox=SandboxConfig(command_files=True)), f"{sys.executable} reader.py {secret}", bot)
    assert f"READ {secret} the seed is 12345" in output, output


@pytest.mark.parametrize("word", ["{secret}", "--notes={secret}", "../elsewhere/notes.txt", "/etc/shadow"])
def test_submit_refuses_a_command_naming_host_files_outside_its_folder(tmp_path: Path, word: str) -> None:
    """Before anything is copied or started, with why and what to do; nothing is stored."""
    secret = secret_file(tmp_path)
    bot = bot_folder(tmp_path, "reader.py", READER)
    folder = tmp_path / "t"
    TournamentStore.create(folder, TournamentSettings(sandbox="on")).close()
    named = word.replace("{secret}", str(secret))
    with TournamentStore.open(folder) as store:
        for bot_dir in (bot, None):  # with --dir, and a command run in the folder it is submitted from
            with pytest.raises(SubmissionError) as e:
                submit(store, f"python reader.py {named}", name="sneaky", cwd=bot, bot_dir=bot_dir)
            text = " ".join(str(e.value).split())
            shown = "/etc/shadow" if "shadow" in word else str(secret)
            assert f"the command names {shown}, outside the bot's folder {bot}" in text, text
            assert "sees only its own folder" in text and "--dir FOLDER" in text, text
        assert store.bots() == []
    assert sorted(p.name for p in (folder / "bots").iterdir()) == []


# ---------------------------------------------------------------- 2. one cap for every write

#: Fills every place it can write, 1 MiB a file, until each refuses; prints a JSON report.
FILLER = textwrap.dedent(
    """
    import errno, json, os, sys
    cap_mb, marker = int(sys.argv[1]), sys.argv[2]
    places = [os.path.dirname(os.environ["THIRTYONE_BOT_ADDRESS"].removeprefix("unix://")), "/dev/shm", "/dev", "/tmp", os.getcwd()]
    for line in open("/proc/self/mountinfo"):
        fields = line.split()
        point, options = fields[4], fields[5].split(",")
        if "rw" in options and os.path.isdir(point) and not point.startswith(("/proc", "/sys")):
            places.append(point)
    chunk = b"x" * (1 << 20)
    report, total = {}, 0
    for i, place in enumerate(dict.fromkeys(places)):
        written, err = 0, None
        while total < 4 * cap_mb << 20:
            try:
                with open(os.path.join(place, f"{marker}-{i}-{written >> 20}"), "wb") as f:
                    f.write(chunk)
            except OSError as e:
                err = errno.errorcode.get(e.errno, str(e.errno))
                break
            written += len(chunk)
            total += len(chunk)
        report[place] = [written, err]
    print("FILLED " + json.dumps(report), flush=True)
    """
)


def test_everything_a_bot_can_write_is_one_capped_tmpfs(tmp_path: Path) -> None:
    """Its socket's folder, /dev/shm, /dev, its scratch and every writable mount: together
    at most ``scratch_mb``, then ENOSPC (or read-only); the socket's folder is only inside
    the sandbox (the referee reaches the socket through ``/proc/PID/root``), with nothing
    written on this machine's disk."""
    cap_mb = 8
    marker = f"filler-{os.getpid()}-{time.monotonic_ns()}"
    bot = bot_folder(tmp_path, "filler.py", FILLER)
    launcher = LocalLauncher(tmp_root=str(tmp_path / "run"), sandbox=SandboxConfig(limits=BotLimits(scratch_mb=cap_mb)))
    (tmp_path / "run").mkdir()

    async def go() -> tuple[str, bool, list[str]]:
        process = await launcher.launch(parse_bot_spec(f"{sys.executable} filler.py {cap_mb} {marker}", cwd=bot))
        try:
            await poll_until_async("the filler to finish", lambda: process.exit_code() is not None, timeout_s=120)
            await process.output_closed(5.0)
            socket_dir = os.path.dirname(process.address.removeprefix("unix://"))
            on_disk = [str(p) for p in (tmp_path / "run").rglob(f"{marker}*")]
            return process.output_tail(20000), os.path.lexists(socket_dir), on_disk
        finally:
            await process.stop(0.5)

    output, host_side, on_disk = run(go())
    lines = [line for line in output.splitlines() if line.startswith("FILLED ")]
    assert lines, output
    report: dict[str, list[int | str | None]] = json.loads(lines[-1].removeprefix("FILLED "))
    total = sum(int(w or 0) for w, _ in report.values())
    assert total <= cap_mb << 20, report
    assert total >= (cap_mb - 1) << 20, report  # the cap is there to be used
    for place, (written, why) in report.items():
        assert why in ("ENOSPC", "EROFS", "EACCES", "EPERM"), (place, written, why)
    assert any(why == "ENOSPC" for _, why in report.values()), report
    assert not host_side  # no way from this machine's disk into the sandbox
    assert on_disk == []
    assert list((tmp_path / "run").iterdir()) == []  # the referee's folder is gone with the bot


# ---------------------------------------------------------------- 4. a CPU share

#: Busy in N processes for a wall-clock while, then prints the CPU seconds they used in all.
BURNER = textwrap.dedent(
    """
    import os, sys, time
    n, seconds = int(sys.argv[1]), float(sys.argv[2])
    pipes = []
    for _ in range(n):
        r, w = os.pipe()
        if os.fork() == 0:
            t0 = time.monotonic()
            while time.monotonic() - t0 < seconds:
                pass
            os.write(w, repr(time.process_time()).encode())
            os._exit(0)
        os.close(w)
        pipes.append(r)
    used = sum(float(os.read(r, 100)) for r in pipes)
    print("BURNED", used, seconds, flush=True)
    """
)


@CGROUPS
def test_a_bot_burning_cpu_in_many_processes_gets_about_its_share(tmp_path: Path) -> None:
    """Four busy processes for 2 s of wall clock with a share of a quarter CPU: they use about
    0.5 CPU seconds in all, not the 2 to 8 a machine with free cores would give them."""
    if not BotCgroup.capabilities()[1]:
        pytest.skip("the cpu controller is not available for the bots' cgroups here")
    bot = bot_folder(tmp_path, "burner.py", BURNER)
    launcher = LocalLauncher(sandbox=SandboxConfig(limits=BotLimits(cpus=0.25)))
    output, _ = run_to_exit(launcher, f"{sys.executable} burner.py 4 2", bot)
    lines = [line.split() for line in output.splitlines() if line.startswith("BURNED ")]
    assert lines, output
    used, wall = float(lines[-1][1]), float(lines[-1][2])
    # At most the share (plus the start of the processes and one period's slack).
    assert used <= 0.25 * wall * 1.5 + 0.1, f"{used:.2f} CPU seconds in {wall:g} s with a share of 0.25 CPU"


#: Says READY, waits for a file ``go`` in its folder, then is busy for a wall-clock while and
#: prints the CPU seconds that took.
ON_GO = textwrap.dedent(
    """
    import os, sys, time
    print("READY", flush=True)
    while not os.path.exists("go"):
        time.sleep(0.005)
    t0 = time.monotonic()
    while time.monotonic() - t0 < float(sys.argv[1]):
        pass
    print("BURNED", time.process_time(), flush=True)
    """
)


@CGROUPS
def test_an_idle_bot_gets_only_the_cpu_the_bots_at_work_leave(tmp_path: Path) -> None:
    """A spare, or a bot kept between its matches, is idle: whatever it does takes CPU only
    from nobody at work. Three busy bots at once, with more than enough cores for two: the
    two at work get their share, the idle one what is left (nearly nothing); at equal weight
    each would get the same."""
    if not BotCgroup.capabilities()[1]:
        pytest.skip("the cpu controller is not available for the bots' cgroups here")
    n = os.cpu_count() or 1
    bot = bot_folder(tmp_path, "burn.py", ON_GO)
    command = f"{sys.executable} burn.py 2"

    async def go() -> tuple[list[float], float]:
        at_work = [LocalLauncher(sandbox=SandboxConfig()) for _ in range(n)]
        idle = LocalLauncher(sandbox=SandboxConfig(), idle=True)
        procs = [await launcher.launch(parse_bot_spec(command, cwd=bot)) for launcher in [*at_work, idle]]
        try:
            # An idle bot starts on what the others leave: slowly on a machine busy otherwise.
            await poll_until_async("the bots to be ready", lambda: all("READY" in p.output_tail(100) for p in procs))
            (bot / "go").write_text("")
            await poll_until_async("the bots to finish", lambda: all(p.exit_code() is not None for p in procs), timeout_s=60)
            for p in procs:
                await p.output_closed(5.0)
            used = [float(p.output_tail(1000).split("BURNED")[-1].split()[0]) for p in procs]
            return used[:-1], used[-1]
        finally:
            for p in procs:
                await p.stop(0.5)

    busy, idle_used = run(go())
    # One core each for the bots at work (their share), and nothing left over for the idle
    # one while they burn; at equal weight it would have had n/(n+1) of a core.
    assert idle_used < 0.35 * min(busy), f"idle bot {idle_used:.2f} CPU seconds, bots at work {busy}"


#: Says READY, waits for a file ``go`` in its folder, says BURNING and is busy until killed.
BUSY = textwrap.dedent(
    """
    import os, time
    print("READY", flush=True)
    while not os.path.exists("go"):
        time.sleep(0.005)
    print("BURNING", flush=True)
    while True:
        pass
    """
)

#: Says READY and waits; on SIGTERM does a tenth of a second's work, then exits 0.
TIDY = textwrap.dedent(
    """
    import signal, sys, time

    def tidy(signum, frame):
        t0 = time.process_time()
        while time.process_time() - t0 < 0.1:
            pass
        sys.exit(0)

    signal.signal(signal.SIGTERM, tidy)
    print("READY", flush=True)
    while True:
        time.sleep(1)
    """
)


@CGROUPS
def test_an_idle_bot_told_to_stop_stops_at_a_working_bot_s_pace(tmp_path: Path) -> None:
    """Stopping is work: an idle bot (a spare not taken, a bot kept between matches) told to
    stop while the bots at work keep every core busy gets a working bot's weight for it, so
    it ends within its grace as the contract promises, not at SIGKILL."""
    if not BotCgroup.capabilities()[1]:
        pytest.skip("the cpu controller is not available for the bots' cgroups here")
    n = os.cpu_count() or 1
    bot = bot_folder(tmp_path, "busy.py", BUSY)
    (bot / "tidy.py").write_text(TIDY)

    async def go() -> int | None:
        busy = [await LocalLauncher(sandbox=SandboxConfig()).launch(parse_bot_spec(f"{sys.executable} busy.py", cwd=bot)) for _ in range(n)]
        idle = await LocalLauncher(sandbox=SandboxConfig(), idle=True).launch(parse_bot_spec(f"{sys.executable} tidy.py", cwd=bot))
        try:
            # Ready before the others burn: an idle bot's own start would wait for them.
            await poll_until_async("the bots to be ready", lambda: all("READY" in p.output_tail(100) for p in [*busy, idle]))
            (bot / "go").write_text("")
            await poll_until_async("the bots at work to burn", lambda: all("BURNING" in p.output_tail(100) for p in busy))
            await idle.stop(2.0)
            return idle.exit_code()
        finally:
            for p in busy:
                await p.stop(0.5)

    # Its tenth of a second of work at the weight of the bots at work: well within the 2 s.
    # At an idle bot's weight it would take minutes, and SIGKILL would end it (-9).
    assert run(go()) == 0


def test_cpus_is_checked_like_the_other_limits() -> None:
    """A share is a number of CPUs, bounded, stored and described like the other limits."""
    with pytest.raises(ValueError) as e:
        BotLimits(cpus=0)
    assert str(e.value) == "limit cpus must be a number from 0.01 to 1024, got 0"
    assert BotLimits(cpus=2).to_dict()["cpus"] == 2.0
    assert "0.5 CPUs" in BotLimits(cpus=0.5).describe()


# ---------------------------------------------------------------- 5. leftovers of kill -9

#: A referee that starts a sandboxed bot, says where the bot's cgroups are, and waits to be killed.
KILLED_RUN = textwrap.dedent(
    """
    import asyncio, sys, time
    from referee.bots import LocalLauncher, parse_bot_spec
    from referee.bots.sandbox import SandboxConfig
    async def main():
        process = await LocalLauncher(sandbox=SandboxConfig()).launch(parse_bot_spec(sys.argv[1]))
        while "up" not in process.output_tail():
            await asyncio.sleep(0.02)
        print("CGROUPS", " ".join(process._cgroup.dirs), flush=True)
        await asyncio.sleep(120)
    asyncio.run(main())
    """
)


def _members(procs: Path) -> str:
    """A cgroup's processes ("" when it holds none, or is gone)."""
    try:
        return procs.read_text().strip()
    except FileNotFoundError:
        return ""


@CGROUPS
def test_the_cgroups_a_killed_run_left_are_removed_by_the_next_launcher(tmp_path: Path) -> None:
    """kill -9 of a referee's process group: its bot dies (bubblewrap's death signal sees to
    that) but its cgroups stay, empty; the next launcher removes them, and no cgroup of a
    live referee."""
    script = tmp_path / "killed_run.py"
    script.write_text(KILLED_RUN)
    sleeper = f"{sys.executable} -c 'import time; print(\"up\", flush=True); time.sleep(120)'"
    referee = subprocess.Popen(
        [sys.executable, str(script), sleeper], stdout=subprocess.PIPE, text=True, start_new_session=True,
        cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    mine = BotCgroup.create(BotLimits())  # a live referee's (this one's): never touched
    assert mine is not None
    made: list[Path] = []
    try:
        assert referee.stdout is not None
        line = referee.stdout.readline()
        assert line.startswith("CGROUPS "), line
        dirs = line.split()[1:]
        assert dirs and all(os.path.isdir(d) for d in dirs)
        os.killpg(referee.pid, signal.SIGKILL)
        referee.wait()
        procs = [Path(d, "cgroup.procs") for d in dirs]
        # Another test's launcher, in another xdist worker, may remove these leftovers first
        # (every launcher does): a cgroup that holds a process cannot be removed, so one that
        # is gone was empty.
        poll_until("the bot to die with its killed referee", lambda: not any(_members(p) for p in procs), timeout_s=60)
        # Someone else's cgroup named after the dead referee stays; one named as an older
        # referee named them (no namespace) goes, being empty.
        parent = Path(dirs[-1]).parent
        foreign, legacy = parent / f"other-{referee.pid}-0", parent / f"thirtyone-bot-{referee.pid}-0"
        made += [foreign, legacy]
        foreign.mkdir()
        legacy.mkdir()
        LocalLauncher(sandbox=SandboxConfig())  # the next run's
        assert [d for d in dirs if os.path.isdir(d)] == []
        assert all(os.path.isdir(d) for d in mine.dirs)
        assert foreign.is_dir() and not legacy.exists()
    finally:
        for d in made:
            with contextlib.suppress(OSError):
                d.rmdir()
        with_group = referee.poll() is None
        if with_group:
            os.killpg(referee.pid, signal.SIGKILL)
        mine.remove()


def test_cpus_is_an_option_wherever_memory_is(tmp_path: Path) -> None:
    """``--cpus`` on ``match``, ``check-bot`` and ``tournament new``: a bad one is an error
    naming the option before anything is made; a good one is the tournament's setting."""
    cli = CliRunner()
    for argv in (["match", "greedy", "random", "--cpus", "0"], ["check-bot", "greedy", "--cpus", "2000"],
                 ["tournament", "new", str(tmp_path / "bad"), "--cpus", "0"]):  # fmt: skip
        result = cli.invoke(app, argv)
        assert result.exit_code == 2, result.output
        assert "--cpus must be a number from 0.01 to 1024" in " ".join(result.stderr.split()), result.output
    assert not (tmp_path / "bad").exists()
    assert cli.invoke(app, ["tournament", "new", str(tmp_path / "t"), "--cpus", "0.5"]).exit_code == 0
    with TournamentStore.open(tmp_path / "t", readonly=True) as store:
        assert store.settings.limits.cpus == 0.5
        config = store.settings.sandbox_config(tmp_path / "t")
        assert config is not None and config.limits.cpus == 0.5 and not config.command_files


def test_a_bot_whose_folder_is_tmp_keeps_its_scratch_and_its_socket(tmp_path: Path) -> None:
    """A bot file directly in /tmp: its folder is not bound over its scratch (which would
    hide the scratch and its socket's folder); the file itself is bound, the rest of the
    host's /tmp is not there."""
    bot = Path("/tmp") / f"thirtyone-test-bot-{os.getpid()}-{time.monotonic_ns()}.py"
    neighbour = tmp_path / "neighbour.txt"  # under /tmp too, on the host
    neighbour.write_text("not yours\n")
    bot.write_text(
        "import os, sys\n"
        "open(os.environ['HOME'] + '/x', 'w').write('x')\n"
        "sock = os.environ['THIRTYONE_BOT_ADDRESS'].removeprefix('unix://')\n"
        "import socket; s = socket.socket(socket.AF_UNIX); s.bind(sock)\n"
        f"print('OK', os.path.exists(sys.argv[0]), os.path.exists({str(neighbour)!r}))\n"
    )
    try:
        output, _ = run_to_exit(LocalLauncher(sandbox=SandboxConfig()), str(bot), tmp_path)
    finally:
        bot.unlink()
    assert "OK True False" in output, output


# ---------------------------------------------------------------- 5. the socket as a link

RELINKER = Path(__file__).resolve().parent / "bots" / "relinker.py"
RELINK_TC = TimeControl(budget_ms=2000, bank_ms=5000, grace_ms=500)


@contextlib.contextmanager
def host_socket(tmp_path: Path) -> Iterator[socket.socket]:
    """A listening Unix socket on the host, outside every sandbox (a daemon's, under /run,
    stands for it), that no bot's link may lead the referee to; non-blocking, so that
    ``accept`` says at once whether anyone connected (a connection, even one closed since,
    waits in the queue until accepted)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(tmp_path / "daemon.sock"))
    listener.listen(16)
    listener.setblocking(False)
    try:
        yield listener
    finally:
        listener.close()


def connections(listener: socket.socket) -> int:
    """How many connections reached ``listener`` (each is accepted and closed)."""
    n = 0
    while True:
        try:
            conn, _ = listener.accept()
        except BlockingIOError:
            return n
        conn.close()
        n += 1


def relinker(to: Path, when: str) -> str:
    """The command of the relinking bot."""
    return shlex.join([sys.executable, str(RELINKER), "--to", str(to), "--when", when])


def test_a_socket_made_a_link_before_serving_is_refused_and_never_followed(tmp_path: Path) -> None:
    """The bot's address is a link to a socket of the host from the start: the referee does
    not start it, says why, and the host's socket gets no connection."""
    with host_socket(tmp_path) as daemon:
        launcher = LocalLauncher(sandbox=SandboxConfig())
        with pytest.raises(BotStartError) as info:
            run(start_bot(relinker(tmp_path / "daemon.sock", "start"), launcher=launcher, startup_timeout_s=40))
        assert connections(daemon) == 0
    message = str(info.value)
    assert "holds a link, not a socket" in message, message
    assert "follows no link" in message, message


def test_a_socket_replaced_by_a_link_after_serving_is_never_followed(tmp_path: Path) -> None:
    """The bot serves, then at its first decision replaces its socket with a link to a
    socket of the host and drops the connection. Its seat gets a crash fault that says so;
    a later match with the same bot (the referee connects again) faults it again; the host's
    socket never gets a connection, and the other bot plays on."""
    with host_socket(tmp_path) as daemon:
        launcher = LocalLauncher(sandbox=SandboxConfig())
        config = MatchConfig(time_control=RELINK_TC)

        async def go() -> tuple[MatchOutcome, MatchOutcome, str, bool]:
            bots = await start_bots([relinker(tmp_path / "daemon.sock", "play"), "greedy"], launcher=launcher, startup_timeout_s=40)
            try:
                first = await play_match(bots, seed=5, config=config)
                again = await play_match(bots, seed=6, config=config)
                assert bots[0].process is not None
                return first, again, bots[0].process.output_tail(4000), bots[0].alive
            finally:
                await close_bots(bots)

        first, again, output, alive = run(go())
        assert connections(daemon) == 0
    assert "RELINKED" in output, output
    assert alive  # a bot that stopped serving, not one that crashed
    for outcome in (first, again):
        seat = outcome.seats[0]
        assert seat.forfeited and [f.kind for f in seat.faults] == ["crash"], seat.faults
        message = seat.faults[0].message
        assert "was replaced by a link after the referee connected" in message, message
        assert not outcome.seats[1].forfeited


# ---------------------------------------------------------------- 6. the machine's TLS keys


@pytest.mark.skipif(not os.path.isdir("/etc/ssl/private"), reason="this machine has no /etc/ssl/private")
def test_the_machines_tls_keys_are_not_in_the_sandbox(tmp_path: Path) -> None:
    """``/etc/ssl/private`` (a reverse proxy's keys; 0710 root) is not bound, though the
    certificates beside it are. A bot runs as the organiser's user, so where that is root it
    passes the folder's owner checks: only its absence keeps the keys from it."""
    source = "import os\nprint('LISTED', sorted(os.listdir('/etc/ssl')), os.path.lexists('/etc/ssl/private'), flush=True)\n"
    bot = bot_folder(tmp_path, "lister.py", source)
    output, _ = run_to_exit(LocalLauncher(sandbox=SandboxConfig()), f"{sys.executable} lister.py", bot)
    line = next((ln for ln in output.splitlines() if ln.startswith("LISTED ")), "")
    assert line.endswith(" False"), output  # not even there
    assert "'certs'" in line or not os.path.isdir("/etc/ssl/certs"), output
