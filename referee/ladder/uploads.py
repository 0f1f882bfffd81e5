"""Bot uploads: our own checked extractor, the ``bot.toml`` manifest, then a frozen, hashed version.

An upload is a ``.tar.gz`` (``.tgz``, ``.tar``) or ``.zip`` of a bot's folder with a
manifest at its top, or a single Python file (as ``thirtyone submit`` takes one)::

    # bot.toml
    name = "greedy"             # the bot's name on the ladder (each upload is a new version)
    command = "python bot.py"   # run inside the folder; python, node, or ./a-static-binary

Archives are never unpacked by a library call that follows links or trusts paths: every
entry is read and checked first (count, declared sizes, compression ratio, kind, path),
then each regular file is written by hand into a fresh folder with ``O_EXCL|O_NOFOLLOW``,
never more bytes than it declared. A link is never made: one that points at a file inside
the bot's folder (as ``npm ci``'s ``node_modules/.bin`` links do) is written as a copy of
that file; links that leave the folder are refused, all of them named at once. Each refusal
names its reason, and a refused upload leaves nothing behind. An accepted folder is hashed as ``submit --dir`` hashes a bot's copy
(:func:`referee.tournament.botfiles.folder_sha256`) and checked again at every launch.
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import shutil
import stat
import sys
import tarfile
import tempfile
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from referee.bots.sandbox import make_readable
from referee.ladder.accounts import check_name
from referee.ladder.errors import BadUpload, TooLarge, TooMany
from referee.ladder.ratings import prior
from referee.ladder.settings import ArenaSettings
from referee.ladder.store import ArenaStore, User, Version, ago
from referee.tournament.botfiles import folder_sha256

MANIFEST = "bot.toml"
#: Program names a manifest's command may start with (anything else is a file of the bot's).
RUNTIMES: dict[str, str] = {
    "python": "Python 3 with the thirtyone SDK (import sdk) and the packages installed with the arena",
    "python3": "the same as python",
    "node": "Node.js, where the arena's machine has it installed (the sample bot's packages are not provided)",
}
#: Python's flags a command may give before the bot's file (``python3 -u bot.py``): each
#: changes how Python runs, none makes it read a file from elsewhere.
PYTHON_FLAGS = ("-u", "-B", "-O", "-OO", "-E", "-s", "-I")
STATIC_BINARY = "a static Linux executable of the bot's own, named ./NAME in the command"
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
#: Links followed from one link before it counts as a loop.
MAX_LINK_HOPS = 40
#: The longest target a zip's link may name (a zip keeps it as the entry's content).
LINK_TEXT_BYTES = 4096
#: Links a refusal names one by one (the rest are counted).
MAX_LINKS_SHOWN = 20
#: Folders an entry's path may go down (``a/b/c.py`` goes down 2), and the characters of its
#: path: a bot needs few levels, and a path 1,500 folders deep costs the server folders and
#: clean-up for a few hundred bytes of upload.
MAX_DEPTH = 32
MAX_PATH_CHARS = 1024


@dataclass(frozen=True, slots=True)
class _Entry:
    """One archive entry, checked: its safe relative path, whether it is a folder, its size;
    for a link, what it points at (a symbolic link's text, or a hard link's archive path)."""

    path: PurePosixPath
    is_dir: bool
    size: int
    executable: bool
    link: str | None = None
    hard: bool = False


def human_size(n: int) -> str:
    """A size for people: KiB under one MiB (a limit of 64 KiB reads as such)."""
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 1024:.0f} KiB"


def _safe_path(name: str) -> PurePosixPath:
    """An entry's path, or a refusal: no absolute path, no ``..``, no control characters."""
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        raise BadUpload(f"the archive entry {name!r} has control characters in its name")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":") or name.startswith("\\"):
        raise BadUpload(f"the archive entry {name!r} has an absolute path; entries must be relative to the bot's folder")
    if "\\" in name:
        raise BadUpload(f"the archive entry {name!r} has a backslash in its path; use '/'")
    if len(name) > MAX_PATH_CHARS:
        raise BadUpload(f"an archive entry's path has {len(name)} characters ({name[:60]!r}...); at most {MAX_PATH_CHARS} are allowed")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise BadUpload(f"the archive entry {name!r} leads out of the bot's folder ('..' in its path)")
    if len(parts) > MAX_DEPTH + 1:
        raise BadUpload(
            f"the archive entry {name[:60]!r}... lies {len(parts) - 1} folders deep; a bot's folder may nest at most {MAX_DEPTH} deep"
        )
    if not parts:
        return PurePosixPath(".")
    return PurePosixPath(*parts)


def _tar_entries(data: bytes) -> Iterator[tuple[_Entry, tarfile.TarFile, tarfile.TarInfo]]:
    try:
        tf = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")  # noqa: SIM115  (closed below, after the checks)
    except (tarfile.TarError, OSError, EOFError) as e:
        raise BadUpload(f"the upload is not a readable tar archive ({e})") from None
    with tf:
        try:
            for m in tf:
                if m.issym() or m.islnk():
                    # Taken as a copy of its target once every file is written (resolve_links).
                    yield _Entry(_safe_path(m.name), False, 0, False, m.linkname, m.islnk()), tf, m
                    continue
                if m.ischr() or m.isblk() or m.isfifo() or m.isdev():
                    raise BadUpload(f"the archive entry {m.name!r} is a device or special file; only files and folders are allowed")
                if not (m.isreg() or m.isdir()):
                    raise BadUpload(f"the archive entry {m.name!r} is not a regular file or folder")
                path = _safe_path(m.name)
                yield _Entry(path, m.isdir(), m.size if m.isreg() else 0, bool(m.mode & 0o111)), tf, m
        except (tarfile.TarError, OSError, EOFError, zlib_error()) as e:
            raise BadUpload(f"the tar archive is damaged ({e})") from None


def zlib_error() -> type[Exception]:
    """zlib's error class (a damaged .tar.gz raises it)."""
    import zlib

    return zlib.error


def _zip_entries(data: bytes) -> Iterator[tuple[_Entry, zipfile.ZipFile, zipfile.ZipInfo]]:
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError) as e:
        raise BadUpload(f"the upload is not a readable zip archive ({e})") from None
    with zf:
        for info in zf.infolist():
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                # A zip keeps a link's target as its content.
                if info.file_size > LINK_TEXT_BYTES:
                    raise BadUpload(f"the archive entry {info.filename!r} is a link with a target over {LINK_TEXT_BYTES} bytes long")
                try:
                    target = zf.read(info).decode("utf-8", "replace")
                except (zipfile.BadZipFile, OSError, zlib_error()) as e:
                    raise BadUpload(f"the zip archive is damaged at {info.filename!r} ({e})") from None
                yield _Entry(_safe_path(info.filename), False, 0, False, target), zf, info
                continue
            if mode and (stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
                raise BadUpload(f"the archive entry {info.filename!r} is a device or special file; only files and folders are allowed")
            path = _safe_path(info.filename)
            yield _Entry(path, info.is_dir(), 0 if info.is_dir() else info.file_size, bool(mode & 0o111)), zf, info


def extract(filename: str, data: bytes, dest: Path, settings: ArenaSettings) -> tuple[int, int]:
    """Unpack an uploaded archive into the new folder ``dest``; return (files, bytes).

    Every check is made before the entry it concerns is written, and declared sizes are
    summed before any content is read, so a bomb is refused before it is inflated.
    """
    if len(data) > settings.max_archive_bytes:
        raise TooLarge(f"the archive is {human_size(len(data))}; an upload may be at most {human_size(settings.max_archive_bytes)}")
    lower = filename.lower()
    entries: Iterator[tuple[_Entry, object, object]]
    if lower.endswith(".zip"):
        entries = _zip_entries(data)
    elif lower.endswith((".tar.gz", ".tgz", ".tar")):
        entries = _tar_entries(data)
    else:
        raise BadUpload(f"{filename!r} is not a bot upload: send a .tar.gz, .tgz, .tar or .zip of the bot's folder, or one .py file")
    dest.mkdir(mode=0o700)
    seen: set[PurePosixPath] = set()
    links: list[_Entry] = []
    count = total = 0

    def check_total() -> None:
        if total > settings.max_unpacked_bytes:
            raise TooLarge(f"the archive unpacks to more than {human_size(settings.max_unpacked_bytes)}, the most a bot's folder may hold")
        if total > settings.max_ratio * max(len(data), 1):
            raise BadUpload(
                f"the archive unpacks to over {settings.max_ratio} times its size (a zip bomb?); "
                f"at most {settings.max_ratio}:1 is accepted"
            )

    for entry, archive, member in entries:
        count += 1
        if count > settings.max_files:
            raise BadUpload(f"the archive holds more than {settings.max_files} entries; a bot's folder may hold at most {settings.max_files}")
        total += entry.size
        check_total()
        if entry.path == PurePosixPath("."):
            if entry.link is not None:
                raise BadUpload("the archive's top is a link; archive the bot's folder itself")
            continue
        if entry.path in seen:
            raise BadUpload(f"the archive holds {str(entry.path)!r} twice")
        seen.add(entry.path)
        if entry.link is not None:
            links.append(entry)
        else:
            _write_entry(dest, entry, archive, member)
    for size in resolve_links(dest, links):
        total += size
        check_total()
    return sum(1 for p in seen if not (dest / p).is_dir()), total


def _link_target(link: _Entry, links: dict[PurePosixPath, _Entry]) -> tuple[PurePosixPath | None, str]:
    """Where a link leads inside the archive, following links to links: (its path, "") or
    (None, why not). Paths are worked out as text, never on the disk."""
    here, hops = link, 0
    while True:
        assert here.link is not None
        text = here.link
        if text.startswith("/"):
            return None, "leads out of the bot's folder"
        parts: list[str] = [] if here.hard else list(here.path.parent.parts)
        for part in text.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if not parts:
                    return None, "leads out of the bot's folder"
                parts.pop()
            else:
                parts.append(part)
        target = PurePosixPath(*parts) if parts else PurePosixPath(".")
        nxt = links.get(target)
        if nxt is None:
            return target, ""
        hops += 1
        if hops > MAX_LINK_HOPS:
            return None, "is one of a loop of links"
        here = nxt


def resolve_links(dest: Path, links: list[_Entry]) -> Iterator[int]:
    """Write each link of an archive as a copy of the file it points at, yielding each copy's
    size (for the caller's limits).

    A link that stays inside the bot's folder (``npm ci`` makes such links in
    ``node_modules/.bin``) is harmless content, so it is taken as its target's bytes. Every link
    that leaves the folder, points at nothing in it, or points at a folder is refused, all of
    them named in one message, before any copy is made.
    """
    if not links:
        return
    by_path = {link.path: link for link in links}
    plans: list[tuple[_Entry, Path]] = []
    problems: list[str] = []
    for link in links:
        target, why = _link_target(link, by_path)
        text = link.link or ""
        text = text if len(text) <= 200 else text[:200] + "…"
        shown = f"{link.path} -> {text}"
        if target is None:
            problems.append(f"{shown}: {why}")
            continue
        source = dest.joinpath(*target.parts)
        try:
            mode = os.lstat(source).st_mode
        except OSError:
            problems.append(f"{shown}: points at nothing in the bot's folder")
            continue
        if stat.S_ISDIR(mode):
            problems.append(f"{shown}: points at a folder (only links to files are taken; copy the folder in its place)")
            continue
        plans.append((link, source))
    if problems:
        shown = "\n  ".join(problems[:MAX_LINKS_SHOWN])
        more = f"\n  and {len(problems) - MAX_LINKS_SHOWN} more" if len(problems) > MAX_LINKS_SHOWN else ""
        raise BadUpload(
            f"the bot's folder holds {len(problems)} link{'s' if len(problems) != 1 else ''} the arena cannot take "
            f"(a link is taken only when it points at a file inside the folder: its content is copied in its place):"
            f"\n  {shown}{more}"
        )
    for link, source in plans:
        # The folder is ours and holds no link: every file in it was written by hand above.
        src_fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(src_fd, "rb") as src:
            st = os.fstat(src.fileno())
            yield st.st_size  # the caller's limits are checked before the copy is made
            mode = 0o755 if st.st_mode & 0o111 else 0o644
            copy = _make_dirs(dest, link.path.parent) / link.path.name
            try:
                fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
            except FileExistsError:
                raise BadUpload(f"the archive holds {str(link.path)!r} twice") from None
            with os.fdopen(fd, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 16)
        os.chmod(copy, mode)


def _make_dirs(dest: Path, rel: PurePosixPath) -> Path:
    here = dest
    for part in rel.parts:
        here = here / part
        try:
            os.mkdir(here, 0o755)
        except FileExistsError:
            if not stat.S_ISDIR(os.lstat(here).st_mode):
                raise BadUpload(f"the archive holds both a file and a folder named {str(rel)!r}") from None
    return here


def _write_entry(dest: Path, entry: _Entry, archive: object, member: object) -> None:
    if entry.is_dir:
        _make_dirs(dest, entry.path)
        return
    parent = _make_dirs(dest, entry.path.parent)
    target = parent / entry.path.name
    mode = 0o755 if entry.executable else 0o644
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    except FileExistsError:
        raise BadUpload(f"the archive holds {str(entry.path)!r} twice") from None
    written = 0
    with os.fdopen(fd, "wb") as out:
        for chunk in _content(archive, member):
            written += len(chunk)
            if written > entry.size:
                raise BadUpload(f"the archive entry {str(entry.path)!r} holds more than the {entry.size} bytes it declares")
            out.write(chunk)
    os.chmod(target, mode)  # whatever the umask


def _content(archive: object, member: object) -> Iterator[bytes]:
    if isinstance(archive, zipfile.ZipFile):
        assert isinstance(member, zipfile.ZipInfo)
        try:
            with archive.open(member) as f:
                yield from iter(lambda: f.read(1 << 16), b"")
        except (zipfile.BadZipFile, OSError, zlib_error()) as e:
            raise BadUpload(f"the zip archive is damaged at {member.filename!r} ({e})") from None
        return
    assert isinstance(archive, tarfile.TarFile) and isinstance(member, tarfile.TarInfo)
    fileobj = archive.extractfile(member)
    if fileobj is None:
        return
    with fileobj as f:
        yield from iter(lambda: f.read(1 << 16), b"")


@dataclass(frozen=True, slots=True)
class Manifest:
    """A bot folder's ``bot.toml``."""

    name: str
    command: str


def read_manifest(folder: Path) -> Manifest:
    """The manifest at the top of an unpacked folder; each problem named."""
    path = folder / MANIFEST
    if not path.is_file():
        raise BadUpload(f"the archive has no {MANIFEST} at its top (name = \"...\", command = \"...\")")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise BadUpload(f"{MANIFEST} is not valid TOML: {e}") from None
    unknown = set(data) - {"name", "command"}
    if unknown:
        raise BadUpload(f"{MANIFEST}: unknown key(s) {', '.join(sorted(unknown))}; it takes name and command")
    name, command = data.get("name"), data.get("command")
    if not isinstance(name, str) or not isinstance(command, str) or not command.strip():
        raise BadUpload(f"{MANIFEST} needs name and command, both text (e.g. command = \"python bot.py\")")
    check_command(folder, command)
    return Manifest(name, command)


def check_command(folder: Path, command: str) -> None:
    """Refuse a command that names a runtime we do not have, or a file the folder lacks."""
    try:
        argv = shlex.split(command)
    except ValueError as e:
        raise BadUpload(f"{MANIFEST}: the command {command!r} cannot be split ({e})") from None
    program = argv[0]
    if program in RUNTIMES:
        if program == "node" and shutil.which("node") is None:
            raise BadUpload("this arena's machine has no Node.js; use python or a static binary")
        args = argv[1:]
        while args and args[0].startswith("-"):
            flag = args.pop(0)
            if not _runtime_flag(program, flag):
                taken = PYTHON_FLAGS if program.startswith("python") else ("--NAME or --NAME=VALUE",)
                raise BadUpload(
                    f"{MANIFEST}: the command {command!r} gives {program} the flag {flag!r}, which the arena does not take "
                    f"(it takes {', '.join(taken)} before the bot's file, and any argument after it); "
                    f"e.g. command = \"{program} {' '.join(a for a in args if not a.startswith('-'))[:60] or 'bot.py'}\""
                )
        if not args:
            raise BadUpload(f"{MANIFEST}: the command {command!r} names no file of the bot's to run")
        wanted = args[0]
    elif "/" in program or program.endswith(".py"):
        wanted = program
    else:
        known = ", ".join(RUNTIMES)
        raise BadUpload(f"{MANIFEST}: the command starts with {program!r}: use one of {known}, or ./FILE for a binary of the bot's")
    rel = _safe_path(wanted)
    target = folder / rel
    if not target.is_file():
        raise BadUpload(f"{MANIFEST}: the command names {wanted!r}, which is not a file in the bot's folder")
    if program not in RUNTIMES and not wanted.endswith(".py") and not os.access(target, os.X_OK):
        raise BadUpload(f"{MANIFEST}: {wanted!r} is not executable (set its executable bit in the archive)")


def _runtime_flag(program: str, flag: str) -> bool:
    """Whether the arena takes ``flag`` before the bot's file: Python's flags that change no
    file it reads (``-u`` unbuffered, ``-O``, ...), and Node's ``--name[=value]`` options."""
    if program.startswith("python"):
        return flag in PYTHON_FLAGS
    return flag.startswith("--") and len(flag) > 2 and " " not in flag


def _root_of(folder: Path) -> Path:
    """The bot's folder in an unpacked archive: the top, or its one folder when the archive
    holds a single folder (``tar czf bot.tgz mybot/``)."""
    if (folder / MANIFEST).exists():
        return folder
    inside = list(folder.iterdir())
    if len(inside) == 1 and inside[0].is_dir() and not inside[0].is_symlink():
        return inside[0]
    return folder


def shadowed_modules(root: Path, command: str) -> list[str]:
    """The files and folders at the top of a Python bot's folder named like a standard module
    that Python loads for it (``random.py``): run from that folder, Python imports the bot's
    file in the module's place, and the bot or the SDK fails with something like "module
    'random' has no attribute 'Random'". Empty for a bot that Python does not run."""
    argv = command.split()
    if not argv or (argv[0] not in ("python", "python3") and not argv[0].endswith(".py")):
        return []
    import sdk  # noqa: F401  (what a Python bot loads: the SDK, gRPC and their imports)

    # The standard modules loaded here, where the SDK is imported: those a bot's Python loads
    # too (a module nobody imports, such as 'test', may be shadowed harmlessly).
    loaded = {name.partition(".")[0] for name in list(sys.modules)} & set(sys.stdlib_module_names)
    found = []
    for p in sorted(root.iterdir()):
        # A folder hides a module only as a package (with __init__.py): a plain folder is a
        # namespace package, which Python takes only when no module of that name exists.
        package = p.is_dir() and (p / "__init__.py").is_file()
        stem = p.name.removesuffix(".py") if p.is_file() and p.name.endswith(".py") else p.name if package else ""
        if stem in loaded and not stem.startswith("_"):
            found.append(p.name + ("/" if p.is_dir() else ""))
    return found


def _refuse_shadowing(root: Path, command: str) -> None:
    found = shadowed_modules(root, command)
    if not found:
        return
    first = found[0].removesuffix(".py").removesuffix("/")
    names = ", ".join(found)
    raise BadUpload(
        f"{names} {'is' if len(found) == 1 else 'are'} named like Python's standard module"
        f"{'' if len(found) == 1 else 's'} ({', '.join(f.removesuffix('.py').removesuffix('/') for f in found)}): "
        f"run from the bot's folder, Python would import the bot's file in the module's place, and the bot or the SDK "
        f"would fail (e.g. \"module '{first}' has no attribute ...\"). Rename it, e.g. {first}_bot.py "
        f"(the bot's name can stay: name = \"{first}\" in bot.toml, or --name {first})"
    )


@dataclass(frozen=True, slots=True)
class Unpacked:
    """An upload unpacked and checked, before anything is stored: the bot's folder inside
    the folder it was unpacked into, its manifest, and its size."""

    root: Path
    manifest: Manifest
    n_files: int
    size: int


def unpack_upload(filename: str, data: bytes, dest: Path, settings: ArenaSettings, *, name: str | None = None) -> Unpacked:
    """Unpack an upload into the new folder ``dest`` and make every check that needs no bot
    process: the archive, the manifest, the command, files named like standard modules. The
    arena runs it on every upload; ``thirtyone remote submit`` runs it first on its own side."""
    filename = PurePosixPath(filename.replace("\\", "/")).name or "upload"
    if filename.lower().endswith(".py"):
        if len(data) > settings.max_archive_bytes:
            raise TooLarge(f"the file is {human_size(len(data))}; an upload may be at most {human_size(settings.max_archive_bytes)}")
        check_name(filename.removesuffix(".py"), "file name")
        dest.mkdir(mode=0o700)
        (dest / filename).write_bytes(data)
        root, n_files, size = dest, 1, len(data)
        manifest = Manifest(name or filename.removesuffix(".py"), filename)
    else:
        n_files, size = extract(filename, data, dest, settings)
        root = _root_of(dest)
        manifest = read_manifest(root)
    _refuse_shadowing(root, manifest.command)
    return Unpacked(root, manifest, n_files, size)


def accept_upload(store: ArenaStore, user: User, filename: str, data: bytes, *, name: str | None = None) -> Version:
    """Check an upload and record it as a new queued version of the user's bot (see the module doc).

    ``name`` (optional) overrides the manifest's name, and names a single Python file's bot
    (default: the file's stem). Nothing is stored unless every check passes. The same files as
    a version of the user's that was rejected (for its own fault) are refused, with a pointer
    to that version's report: they would be rejected again.
    """
    settings = store.settings
    if store.uploads_since(user.id, ago(86_400)) >= settings.daily_uploads:
        raise TooMany(f"you have uploaded {settings.daily_uploads} versions in the last 24 hours, this arena's daily limit; try again later")
    filename = PurePosixPath(filename.replace("\\", "/")).name or "upload"
    uploads = store.folder / "uploads"
    staging = Path(tempfile.mkdtemp(prefix="upload-", dir=uploads))
    try:
        unpacked = unpack_upload(filename, data, staging / "files", settings, name=name)
        root, manifest = unpacked.root, unpacked.manifest
        # Its folder was made private while it was unpacked; the bot reads it as an
        # unprivileged user (as root: nobody); the arena folder above stays private.
        make_readable(root)
        bot = check_name(name or manifest.name, "bot name")
        owner = store.bot_owner(bot)
        if owner is not None and owner != user.id:
            raise BadUpload(f"the bot name {bot!r} belongs to another user; choose another name", code="name_taken", status=409)
        sha = folder_sha256(root)
        twin = store.rejected_twin(user.id, sha)
        if twin is not None:
            first = twin.reason.splitlines()[0] if twin.reason else "see its report"
            raise BadUpload(
                f"these files are the same as {twin.label} (version {twin.id}), which was rejected: {first}. "
                f"Its report is in My bots and in 'thirtyone remote status'; change the bot and upload it again "
                f"(or delete that version: 'thirtyone remote delete {twin.id}')",
                code="rejected_before", status=409,
            )
        mu, sigma = prior()

        def place(version_id: int) -> str:
            dest = store.folder / "versions" / str(version_id)
            if dest.exists():  # a folder a killed upload left without its row
                remove_tree(dest)
            os.replace(root, dest)
            return str(dest.relative_to(store.folder))

        return store.add_version(
            user.id, bot, place=place, command=manifest.command, sha256=sha, n_files=unpacked.n_files, size=unpacked.size,
            source=filename, mu=mu, sigma=sigma,
        )
    finally:
        remove_tree(staging)


def remove_tree(top: Path) -> None:
    """Remove ``top`` and everything below it, however deep, as ``shutil.rmtree`` with
    ``ignore_errors`` does: what cannot be removed stays, and nothing is raised.

    ``shutil.rmtree`` recurses once per folder level (a ``RecursionError`` past about a
    thousand, which ``ignore_errors`` does not catch); this walks with a list of its own,
    never following a link.
    """
    stack = [os.fspath(top)]
    stuck: set[str] = set()  # folders that could not be listed or removed: not tried again
    while stack:
        here = stack[-1]
        try:
            entries = list(os.scandir(here))
        except NotADirectoryError:
            stack.pop()
            with contextlib.suppress(OSError):
                os.unlink(here)
            continue
        except OSError:
            stack.pop()
            stuck.add(here)
            continue
        folders = []
        for e in entries:
            try:
                is_dir = e.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if e.path not in stuck:
                    folders.append(e.path)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(e.path)
        if folders:
            stack.extend(folders)  # emptied first; this folder comes back after them
            continue
        stack.pop()
        try:
            os.rmdir(here)
        except FileNotFoundError:
            pass
        except OSError:
            stuck.add(here)
