"""What a worker does to play one task: start (or reuse) its bots, play, report.

A worker keeps its bots running across the matches it plays (no launch per match), and
while a match plays it may start spare processes of bots it will need started again
(:class:`Spare`). A bot process plays one rotation of a deal at most (:func:`remembers`): the
deal's other rotations go to other workers, or to bots the worker starts again. Each seat's
bot output is kept beside the match's log when the task asks for it.

:func:`play_task` is the whole of playing a task, shared by the local pool's worker process
(:func:`worker_main`, which also sends heartbeats down its pipe) and Ray's workers.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any, TypeAlias

from referee.bots.process import LocalLauncher
from referee.bots.sandbox import SandboxStatus, probe
from referee.tournament.settings import TournamentSettings
from referee.tournament.tasks import (
    STARTUP_TIMEOUT_S,
    BotLaunch,
    MatchTask,
    TaskResult,
    describe_error,
    outcome_to_result,
    output_file_name,
    with_absent,
)

if TYPE_CHECKING:
    from referee.bots import BotHandle


#: A worker's event loop says it is alive this often while it plays a match, in seconds
#: (the pool's :data:`~referee.tournament.pool.SILENCE_LIMIT_S` counts from the last).
HEARTBEAT_S = 1.0
#: Cap on what is kept of one bot's output in one match, in bytes.
BOT_OUTPUT_BYTES = 1024 * 1024
#: Bots a worker keeps running between matches (the least recently used stop first).
MAX_KEPT_BOTS = 12


def _watch_parent(parent: int) -> None:
    # A worker whose runner was killed (kill -9) must not live on: exiting closes the
    # referee's watchdog pipe, which stops this worker's bots too.
    while True:
        time.sleep(0.2)
        if os.getppid() != parent:
            os._exit(3)


def _launcher_for(task: MatchTask, *, idle: bool = False) -> LocalLauncher:
    """The launcher of a task's bots: the one place where how bots are run is decided
    (``idle``: spares, see :class:`Spare`)."""
    return LocalLauncher(tmp_root=task.tmp_root, sandbox=task.sandbox, idle=idle)


async def _start(b: BotLaunch, launcher: LocalLauncher) -> BotHandle:
    from referee.bots import start_bot
    from referee.tournament.submit import launch_spec

    # The copied files are checked first: a bot whose files changed is refused, not run. In a
    # thread, as is the sandbox's one-time probe (it starts a sandbox): the event loop keeps
    # its heartbeat going whatever the disk or the machine's load make them cost.
    spec = await asyncio.to_thread(
        launch_spec, b.spec, b.cwd, kind=b.kind, files=b.files, sha256=b.sha256, name=b.name
    )
    if launcher.sandbox is not None:
        await asyncio.to_thread(probe)
    return await start_bot(spec, startup_timeout_s=STARTUP_TIMEOUT_S, launcher=launcher)


def _keep_output(handle: BotHandle, path: str | None) -> None:
    from referee.bots.process import LocalBotProcess

    if isinstance(handle.process, LocalBotProcess):
        handle.process.keep_output(path, BOT_OUTPUT_BYTES)


@dataclass(eq=False)
class Spare:
    """A bot process started while a match plays, for a later match of the worker's.

    It is idle until taken (its launcher's :attr:`~referee.bots.process.LocalLauncher.idle`):
    it gets CPU only as the match's bots leave it, so that neither its start nor anything it
    does meanwhile slows the match in play, which a bot could otherwise turn against the
    bots it plays. Awaiting it takes it: its weight is a working bot's from then on, the
    rest of its start included.
    """

    task: asyncio.Task[BotHandle]
    launcher: LocalLauncher

    def __await__(self) -> Generator[Any, None, BotHandle]:
        self.launcher.wake()
        return self.task.__await__()


#: A worker's spare bot processes, by bot name: started while a match plays, for the next.
Spares: TypeAlias = dict[str, Spare]


async def _discard(spare: Spare) -> None:
    """Stop a spare that will not be used, started or still starting."""
    task = spare.task
    task.cancel()
    try:
        h = await task
    except BaseException:  # cancelled, or it failed to start: nothing is left running
        if not task.done():  # this coroutine itself was cancelled: pass that on
            raise
        return
    await h.close()


async def discard_spares(spares: Spares, keep: Iterable[str] = ()) -> None:
    """Stop the spares whose bots are not in ``keep``."""
    kept = set(keep)
    names = [n for n in spares if n not in kept]
    await asyncio.gather(*(_discard(spares.pop(n)) for n in names))


async def _start_fresh(b: BotLaunch, launcher: LocalLauncher, spares: Spares) -> BotHandle:
    """The bot's spare if it has one that came up (waiting for it if it is still starting),
    else a bot started now."""
    from referee.faults import BotError

    spare = spares.pop(b.name, None)
    if spare is not None:
        try:
            h = await spare
        except BotError:
            pass  # started again below: a bot that cannot start says why there
        else:
            if h.alive and not h.deals:
                return h
            await h.close()
    return await _start(b, launcher)


async def play_task(
    task: MatchTask, handles: dict[str, BotHandle], send: Callable[[object], None], spares: Spares | None = None
) -> TaskResult:
    """Play one task with the worker's running bots (``handles``, updated: started, started
    again, stopped), and its spares, if it keeps any."""
    from referee.faults import BotError
    from referee.match import MatchConfig, play_match

    key = task.match.key
    started = time.monotonic()
    launcher = _launcher_for(task)
    # Spares only for a caller that keeps them (the local pool's worker): none would stop them.
    keeps_spares = spares is not None
    spares = {} if spares is None else spares
    await discard_spares(spares, keep=(b.name for b in task.bots if b.name not in task.absent))
    why: dict[int, str] = {}
    to_start: list[BotLaunch] = []
    for s, b in enumerate(task.bots):
        if b.name in task.absent:
            why[s] = "disqualified"
            continue
        h = handles.get(b.name)
        if h is not None and (not h.alive or remembers(h, task.match.seed)):
            await h.close()
            del handles[b.name]
        if b.name in handles:
            handles[b.name] = handles.pop(b.name)  # the most recently used last
        elif b not in to_start:
            to_start.append(b)
    await _evict(handles, len(to_start), {b.name for b in task.bots})
    t0 = time.monotonic()
    outcomes = await asyncio.gather(*(_start_fresh(b, launcher, spares) for b in to_start), return_exceptions=True)
    startup = time.monotonic() - t0 if to_start else 0.0
    failures: dict[str, str] = {}
    for b, got in zip(to_start, outcomes, strict=True):
        if isinstance(got, BotError):
            failures[b.name] = _short(str(got))
        elif isinstance(got, BaseException):
            raise got
        else:
            handles[b.name] = got
    for s, b in enumerate(task.bots):
        if b.name in failures:
            why[s] = f"could not start: {failures[b.name]}"
    present = [s for s in range(len(task.bots)) if s not in why]
    names = [b.name for b in task.bots]
    ok_names = tuple(names[s] for s in present)
    players = [handles[names[s]] for s in present]
    # At work until the match ends; idle (a spare's weight) before and after it.
    _set_idle(players, False)
    send(("started", key))
    if len(present) < 2:
        _set_idle(players, True)
        return TaskResult(
            key, True, with_absent(names, None, present, why), "", time.monotonic() - started, startup,
            start_failures=failures, started=ok_names, has_log=False,
        )
    settings = TournamentSettings.from_dict(task.settings)
    config = MatchConfig(settings.rules, settings.time_control, settings.fault_policy, settings.max_strikes)  # type: ignore[arg-type]
    for h in players:
        # Before the first card: a match that fails halfway has still shown some of the deal.
        h.deals.add(task.match.seed)
    for b in task.bots:
        # Started while this match plays, on the cores its ping-pong leaves idle, so that the
        # next match need not wait for them.
        if keeps_spares and b.name in task.prestart and b.name in handles and b.name not in spares:
            idle = _launcher_for(task, idle=True)
            spares[b.name] = Spare(asyncio.create_task(_start(b, idle)), idle)
    if task.output_dir:
        os.makedirs(task.output_dir, mode=0o700, exist_ok=True)
    # Named by the seat in the match played (the log's seat), which is what a replay shows.
    for i, (s, h) in enumerate(zip(present, players, strict=True)):
        _keep_output(h, os.path.join(task.output_dir, output_file_name(i, names[s])) if task.output_dir else None)
    try:
        outcome = await play_match(players, seed=task.match.seed, config=config, log_path=task.log_path, match_id=key)
    finally:
        _set_idle(players, True)
        for h in players:
            if h.process is not None and h.exit_code() is not None:
                # A bot that died: its last words may still be in the pipe.
                await h.process.output_closed(0.5)
            _keep_output(h, None)
    played = outcome_to_result(outcome)
    result = with_absent(names, played, present, why) if why else played
    return TaskResult(
        key, True, result, "", time.monotonic() - started, startup, start_failures=failures, started=ok_names
    )


def _set_idle(handles: Iterable[BotHandle], idle: bool) -> None:
    """Mark the worker's bots idle between their matches, or at work in one (see
    :meth:`~referee.bots.process.LocalBotProcess.set_idle`): a bot kept running gets CPU
    only as the bots at work leave it while it is not playing."""
    from referee.bots.process import LocalBotProcess

    for h in handles:
        if isinstance(h.process, LocalBotProcess):
            h.process.set_idle(idle)


def remembers(handle: BotHandle, seed: int) -> bool:
    """Whether ``handle``'s process has played the deal ``seed`` and so may know its cards.

    The rotations of a deal deal the same cards to other seats (duplicate deals), and a bot
    kept running could remember in one rotation what it saw in another: whose hand it held,
    which cards the stock gave. So a bot process is seated at one match of a deal at most; for
    another it is started again, with nothing of the last one's memory (the sandbox gives each
    start a new scratch folder). A bot at an address is not ours to restart: whoever runs it
    decides what it keeps.
    """
    return handle.process is not None and seed in handle.deals


async def _evict(handles: dict[str, BotHandle], starting: int, needed: set[str]) -> None:
    """Stop the least recently used bots beyond :data:`MAX_KEPT_BOTS` (with ``starting``
    about to start), never one that ``needed`` names: a worker of a ladder of many versions
    would otherwise keep every bot it ever started running."""
    from referee.bots import close_bots

    spare = [name for name in handles if name not in needed]
    over = len(handles) + starting - MAX_KEPT_BOTS
    if over > 0 and spare:
        await close_bots([handles.pop(name) for name in spare[:over]])


#: Longest text a worker sends about one failure. Messages stay a few KiB, so that each goes
#: down the pipe in one write: a worker stopped mid-message cannot leave the parent reading.
MAX_MESSAGE_TEXT = 600


def _short(text: str) -> str:
    # Head and tail: a start failure's message ends with the bot's last output.
    half = MAX_MESSAGE_TEXT // 2
    return text if len(text) <= MAX_MESSAGE_TEXT else text[:half] + " … " + text[-half:]


async def _heartbeat(conn: Connection, key: str) -> None:
    """Tell the runner, from the event loop, that this worker is alive and not stuck."""
    while True:
        await asyncio.sleep(HEARTBEAT_S)
        with contextlib.suppress(OSError):
            conn.send(("alive", key))


async def _worker_loop(conn: Connection) -> None:
    # What every match needs, imported before the worker says it is up: an import holds the
    # event loop (and so the heartbeat), and costs seconds on a loaded machine.
    import referee.match  # noqa: F401
    from referee.bots import close_bots

    handles: dict[str, BotHandle] = {}
    spares: Spares = {}
    loop = asyncio.get_running_loop()
    # The pipe is read when the loop sees it readable: a thread blocked in recv() would keep
    # the worker from exiting when it is told to stop.
    readable = asyncio.Event()
    loop.add_reader(conn.fileno(), readable.set)
    with contextlib.suppress(OSError):
        conn.send(("ready", ""))
    try:
        while True:
            await readable.wait()
            readable.clear()
            if not conn.poll():
                continue
            try:
                task: MatchTask | None = conn.recv()
            except EOFError:
                return
            if task is None:
                return
            started = time.monotonic()
            beats = asyncio.create_task(_heartbeat(conn, task.match.key))
            try:
                r = await play_task(task, handles, conn.send, spares)
            except Exception as e:  # the infrastructure's: recorded, and the match is played again
                r = TaskResult(task.match.key, False, {}, _short(describe_error(e)), time.monotonic() - started, infra=True)
            finally:
                beats.cancel()
            conn.send(("result", r))
    finally:
        loop.remove_reader(conn.fileno())
        await asyncio.gather(close_bots(list(handles.values())), discard_spares(spares))


def worker_main(conn: Connection, parent: int, probed: SandboxStatus | None = None) -> None:
    """A local worker process: play the tasks that come down ``conn`` until told to stop (None,
    or SIGTERM), sending heartbeats and results back; exit when the process ``parent`` is gone.
    ``probed`` is what the parent's sandbox probe found (the same machine and user)."""
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    if probed is not None:
        probe.adopt(probed)
    # Ctrl-C reaches the whole foreground group; the parent decides what happens, and
    # terminates workers itself, so a worker ignores SIGINT and stops cleanly on SIGTERM.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with asyncio.Runner() as runner:
        main = runner.get_loop().create_task(_worker_loop(conn))
        runner.get_loop().add_signal_handler(signal.SIGTERM, main.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            runner.run(_await(main))


async def _await(task: asyncio.Task[None]) -> None:
    await task


