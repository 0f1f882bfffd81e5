"""Bot uploads: our own checked extractor, the ``bot.toml`` manifest, then a frozen, hashed version.

An upload is a ``.tar.gz`` (``.tgz``, ``.tar``) or ``.zip`` of a bot's folder with a
manifest at its top, or a single Python file (as ``thirtyone submit`` takes one)::

    # bot.toml
    name = "greedy"             # the bot's name on the ladder (each upload is a new version)
    command = "python bot.py"   # run inside the folder; python, node, or ./a-static-binary

Archives are never unpacked by a library call that follows links or trusts paths: every
entry is read and checked first (count, declared sizes, compression ratio, kind, path),
then each regular file is written by hand into a fresh folder with ``O_EXCL|O_NOFOLLOW``,
never more bytes than it declared. Each refusal names its reason, and a refused upload
leaves nothing behind. An accepted folder is hashed as ``submit --dir`` hashes a bot's copy
(:func:`referee.tournament.botfiles.folder_sha256`) and checked again at every launch.
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import shutil
import stat
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
STATIC_BINARY = "a static Linux executable of the bot's own, named ./NAME in the command"
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
#: Folders an entry's path may go down (``a/b/c.py`` goes down 2), and the characters of its
#: path: a bot needs few levels, and a path 1,500 folders deep costs the server folders and
#: clean-up for a few hundred bytes of upload.
MAX_DEPTH = 32
MAX_PATH_CHARS = 1024


@dataclass(frozen=True, slots=True)
class _Entry:
    """One archive entry, checked: its safe relative path, whether it is a folder, its size."""

    path: PurePosixPath
    is_dir: bool
    size: int
    executable: bool


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
                    raise BadUpload(f"the archive entry {m.name!r} is a link; links are not allowed in a bot's folder")
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
                raise BadUpload(f"the archive entry {info.filename!r} is a link; links are not allowed in a bot's folder")
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
    count = total = 0
    for entry, archive, member in entries:
        count += 1
        if count > settings.max_files:
            raise BadUpload(f"the archive holds more than {settings.max_files} entries; a bot's folder may hold at most {settings.max_files}")
        total += entry.size
        if total > settings.max_unpacked_bytes:
            raise TooLarge(f"the archive unpacks to more than {human_size(settings.max_unpacked_bytes)}, the most a bot's folder may hold")
        if total > settings.max_ratio * max(len(data), 1):
            raise BadUpload(
                f"the archive unpacks to over {settings.max_ratio} times its size (a zip bomb?); "
                f"at most {settings.max_ratio}:1 is accepted"
            )
        if entry.path == PurePosixPath("."):
            continue
        if entry.path in seen:
            raise BadUpload(f"the archive holds {str(entry.path)!r} twice")
        seen.add(entry.path)
        _write_entry(dest, entry, archive, member)
    return sum(1 for p in seen if not (dest / p).is_dir()), total


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
        if len(argv) < 2:
            raise BadUpload(f"{MANIFEST}: the command {command!r} names no file of the bot's to run")
        wanted = argv[1]
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


def _root_of(folder: Path) -> Path:
    """The bot's folder in an unpacked archive: the top, or its one folder when the archive
    holds a single folder (``tar czf bot.tgz mybot/``)."""
    if (folder / MANIFEST).exists():
        return folder
    inside = list(folder.iterdir())
    if len(inside) == 1 and inside[0].is_dir() and not inside[0].is_symlink():
        return inside[0]
    return folder


def accept_upload(store: ArenaStore, user: User, filename: str, data: bytes, *, name: str | None = None) -> Version:
    """Check an upload and record it as a new queued version of the user's bot (see the module doc).

    ``name`` (optional) overrides the manifest's name, and names a single Python file's bot
    (default: the file's stem). Nothing is stored unless every check passes.
    """
    settings = store.settings
    if store.uploads_since(user.id, ago(86_400)) >= settings.daily_uploads:
        raise TooMany(f"you have uploaded {settings.daily_uploads} versions in the last 24 hours, this arena's daily limit; try again later")
    filename = PurePosixPath(filename.replace("\\", "/")).name or "upload"
    uploads = store.folder / "uploads"
    staging = Path(tempfile.mkdtemp(prefix="upload-", dir=uploads))
    try:
        unpacked = staging / "files"
        if filename.lower().endswith(".py"):
            if len(data) > settings.max_archive_bytes:
                raise TooLarge(f"the file is {human_size(len(data))}; an upload may be at most {human_size(settings.max_archive_bytes)}")
            check_name(filename.removesuffix(".py"), "file name")
            unpacked.mkdir(mode=0o700)
            (unpacked / filename).write_bytes(data)
            root, n_files, size = unpacked, 1, len(data)
            make_readable(root)
            manifest = Manifest(name or filename.removesuffix(".py"), filename)
        else:
            n_files, size = extract(filename, data, unpacked, settings)
            root = _root_of(unpacked)
            # Its folder was made private while it was unpacked; the bot reads it as an
            # unprivileged user (as root: nobody); the arena folder above stays private.
            make_readable(root)
            manifest = read_manifest(root)
        bot = check_name(name or manifest.name, "bot name")
        owner = store.bot_owner(bot)
        if owner is not None and owner != user.id:
            raise BadUpload(f"the bot name {bot!r} belongs to another user; choose another name", code="name_taken", status=409)
        sha = folder_sha256(root)
        mu, sigma = prior()

        def place(version_id: int) -> str:
            dest = store.folder / "versions" / str(version_id)
            if dest.exists():  # a folder a killed upload left without its row
                remove_tree(dest)
            os.replace(root, dest)
            return str(dest.relative_to(store.folder))

        return store.add_version(
            user.id, bot, place=place, command=manifest.command, sha256=sha, n_files=n_files, size=size,
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
