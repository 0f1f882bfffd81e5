"""The documentation against the repository and the code.

- Nothing tracked refers to files outside the repository (the project ships on its own).
- Every relative Markdown link in README.md and docs/*.md (the manual, a MkDocs site) points
  to a file that exists, and every ``#anchor`` to a heading that exists; mkdocs.yml's nav
  holds every page of the manual once, and nothing else. (``mkdocs build --strict``, which
  checks the same as the site sees it, runs in .ci/run.)
- The README's bot is a bot: it plays a match under every preset.
- docs/rules.md's worked examples, options table and presets table say what the game model
  does.
- The manual's description of the match log (docs/log-format.md) matches lines the
  referee's log writer writes.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from thirtyone.v1 import log_pb2

from referee.game import Rules, cards, hand_value
from referee.game.rules import OPTION_NAMES, PRESETS, coerce_option
from tests.replay.fixtures import write_all

ROOT = Path(__file__).resolve().parent.parent
RULES_DOC = ROOT / "docs" / "rules.md"

# Written in pieces so that this file does not contain what it looks for.
FORBIDDEN = ("../" + "shared", "RULES" + ".md", "DESIGN" + ".md", "/work/" + "shared")


def tracked_files() -> list[Path]:
    """The files git tracks in this checkout (skips the test outside a git checkout)."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [ROOT / name for name in out.decode().split("\0") if name]


def test_nothing_refers_outside_the_repository() -> None:
    offenders: list[str] = []
    files = tracked_files()
    assert any(p.name == "README.md" for p in files)
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue  # binary, or deleted in the work tree
        for lineno, line in enumerate(text.splitlines(), start=1):
            offenders.extend(
                f"{path.relative_to(ROOT)}:{lineno}: {word}" for word in FORBIDDEN if word in line
            )
    assert not offenders, "references outside the repository:\n" + "\n".join(offenders)


# ---------------------------------------------------------------- Markdown links

_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.MULTILINE)


def markdown_files() -> list[Path]:
    """README.md and every Markdown file under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _prose(text: str) -> str:
    """Markdown without its code blocks (links inside code are not links)."""
    return _FENCE.sub("", text)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings (repeats get -1, -2, ... as on GitHub)."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    for heading in _HEADING.findall(_prose(path.read_text(encoding="utf-8"))):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path: Path) -> Iterator[str]:
    """The targets of a Markdown file's inline links, outside code."""
    # Brackets inside code (`[rules]`) are not link text; the link of [`x`](x) stays whole.
    prose = _prose(path.read_text(encoding="utf-8"))
    text = _CODE_SPAN.sub(lambda m: m.group(0).replace("[", "").replace("]", ""), prose)
    yield from _LINK.findall(text)


def test_slug_matches_github() -> None:
    assert slug("The turn limit") == "the-turn-limit"
    assert slug("Showdown and lost lives") == "showdown-and-lost-lives"
    assert slug("Setting `max_rounds` (the guard)") == "setting-max_rounds-the-guard"


@pytest.mark.parametrize("doc", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(doc: Path) -> None:
    broken: list[str] = []
    for target in links(doc):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue  # https:, mailto: ...: not a file of the repository
        file_part, _, anchor = target.partition("#")
        dest = (doc.parent / file_part).resolve() if file_part else doc
        if not dest.exists():
            broken.append(f"{target}: no such file")
            continue
        try:
            dest.relative_to(ROOT)
        except ValueError:
            broken.append(f"{target}: outside the repository")
            continue
        if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.relative_to(ROOT)}")
    assert not broken, f"broken links in {doc.relative_to(ROOT)}:\n" + "\n".join(broken)


# ---------------------------------------------------------------- the site (mkdocs.yml)

# "- Title: page.md" or "- page.md"; a title may hold a colon of its own.
_NAV_PAGE = re.compile(r"^\s*-\s+(?:.*:\s+)?([\w./-]+\.md)\s*$", re.MULTILINE)


def nav_pages() -> list[str]:
    """The pages mkdocs.yml's nav lists, in order (the nav is the file's last block)."""
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "\nnav:\n" in text, "mkdocs.yml has no nav"
    return _NAV_PAGE.findall(text.split("\nnav:\n", 1)[1])


def test_the_nav_holds_every_page_once() -> None:
    pages = nav_pages()
    assert pages[0] == "index.md"
    assert len(pages) == len(set(pages)), "a page is in the nav twice"
    on_disk = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert sorted(pages) == on_disk, (sorted(set(on_disk) - set(pages)), sorted(set(pages) - set(on_disk)))


def test_the_readme_links_every_page_of_the_manual() -> None:
    """The front door leads to every room."""
    linked = {target.partition("#")[0] for target in links(ROOT / "README.md")}
    missing = [page for page in nav_pages() if page != "index.md" and f"docs/{page}" not in linked]
    assert not missing, f"README.md links none of {missing}"


def test_the_readme_stays_a_front_door() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines < 200, f"README.md has {lines} lines: the manual belongs in docs/"


def test_the_readme_bot_plays_under_every_preset() -> None:
    from sample_bots import load
    from sdk.harness import play_match

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    (code,) = re.findall(r"^```python\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    namespace: dict[str, Any] = {"__name__": "readme_bot"}
    exec(compile(code, "README.md", "exec"), namespace)
    for preset in PRESETS:
        outcome = play_match([namespace["MyBot"], load("greedy"), load("random")], seed=5, rules=preset)
        assert sorted(outcome.placings)[0] == 1, preset


def test_rules_doc_keeps_its_stable_headings() -> None:
    """Other documents and the proto comments name these sections; a later change adds to
    "Variants" rather than renaming it."""
    have = anchors(RULES_DOC)
    for anchor in ("hand-values", "rules-options", "presets", "what-a-bot-sees", "forfeits", "variants"):
        assert anchor in have
    text = RULES_DOC.read_text(encoding="utf-8")
    assert "\n## Variants\n" in text


# ---------------------------------------------------------------- rules.md against the code


def section(name: str) -> str:
    """The text of one ``##``/``###`` section of docs/rules.md, up to the next heading."""
    text = RULES_DOC.read_text(encoding="utf-8")
    pattern = rf"^#{{2,3}} {re.escape(name)}\n(.*?)(?=^#{{1,3}} )"
    m = re.search(pattern, text + "\n# end", re.MULTILINE | re.DOTALL)
    assert m, f"no section {name!r} in docs/rules.md"
    return m.group(1)


def table_rows(text: str) -> list[list[str]]:
    """The body rows of the first Markdown table in ``text``, cells stripped."""
    rows = [line for line in text.splitlines() if line.startswith("|")]
    assert len(rows) >= 3, "no table"
    return [[c.strip() for c in row.strip().strip("|").split("|")] for row in rows[2:]]


def _code(cell: str) -> list[str]:
    return re.findall(r"`([^`]*)`", cell)


def _text(value: Any) -> str:
    """An option value as the docs write it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def test_worked_examples_are_what_the_scorer_says() -> None:
    rows = table_rows(section("Worked examples"))
    assert len(rows) >= 15
    for hand, options, value, _why in rows:
        opts = dict(item.split("=", 1) for item in _code(options))
        rules = Rules.build("standard", opts)
        (hand_text,) = _code(hand)
        assert hand_value(cards(hand_text), rules) == float(value), (hand, options)


def test_options_table_lists_every_option_with_its_default() -> None:
    rows = table_rows(section("Rules options"))
    default = Rules()
    names = []
    for option, values, default_cell, _what in rows:
        (name,) = _code(option)
        names.append(name)
        assert _code(default_cell) == [_text(getattr(default, name))], name
        # Every value the table lists by name is one the option accepts.
        for listed in _code(values):
            coerce_option(name, listed)
    assert names == list(OPTION_NAMES)


def test_presets_table_is_the_presets() -> None:
    text = section("Presets")
    header = next(line for line in text.splitlines() if line.startswith("|"))
    presets = [c for cell in header.strip("|").split("|")[1:] for c in _code(cell)]
    assert presets == list(PRESETS)
    rows = table_rows(text)
    assert [_code(r[0])[0] for r in rows] == list(OPTION_NAMES)
    for row in rows:
        name = _code(row[0])[0]
        for preset, cell in zip(presets, row[1:], strict=True):
            assert _code(cell) == [_text(getattr(Rules.preset(preset), name))], (preset, name)


# ---------------------------------------------------------------- the match log's format


@pytest.fixture(scope="module")
def log_lines(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Every line of the replay tests' fixture logs, written by the referee's LogWriter."""
    folder = tmp_path_factory.mktemp("doc-logs")
    out: list[str] = []
    for path in write_all(folder).values():
        out.extend(path.read_text(encoding="utf-8").splitlines())
    return out


def _check_object(obj: dict[str, Any], msg: Message, where: str) -> None:
    """Every field without presence is written (zero values too); a field with presence is
    written exactly when set; nothing else is written."""
    desc = msg.DESCRIPTOR
    names = {f.json_name for f in desc.fields}
    assert set(obj) <= names, f"{where}: unknown keys {set(obj) - names}"
    for f in desc.fields:
        written = f.json_name in obj
        if f.has_presence:
            assert written == msg.HasField(f.name), f"{where}.{f.json_name}"
        else:
            assert written, f"{where}.{f.json_name} is left out"
        if not written or f.type != FieldDescriptor.TYPE_MESSAGE:
            continue
        value = getattr(msg, f.name)
        if f.is_repeated:
            for i, (o, m) in enumerate(zip(obj[f.json_name], value, strict=True)):
                _check_object(o, m, f"{where}.{f.json_name}[{i}]")
        else:
            _check_object(obj[f.json_name], value, f"{where}.{f.json_name}")


def test_log_lines_write_every_field_as_the_readme_says(log_lines: list[str]) -> None:
    assert len(log_lines) > 50
    for i, line in enumerate(log_lines):
        obj = json.loads(line)
        record = log_pb2.LogRecord()
        json_format.Parse(line, record)
        _check_object(obj, record, f"line {i + 1}")


def log_format_page() -> str:
    """The manual's page on the match log's format, without its title."""
    text = (ROOT / "docs" / "log-format.md").read_text(encoding="utf-8")
    assert text.startswith("# The match log\n"), "docs/log-format.md is not the match log's page"
    return text


def test_log_format_examples_occur_in_real_lines(log_lines: list[str]) -> None:
    """Each `"key": value` example the page gives is spelled as the writer spells it."""
    examples = [s for s in _code(_prose(log_format_page())) if re.fullmatch(r'"\w+": .+', s)]
    assert len(examples) >= 5
    for example in examples:
        assert any(example in line for line in log_lines), f"docs/log-format.md example {example} never occurs"


def test_key_order_is_not_fixed(log_lines: list[str]) -> None:
    """Why docs/log-format.md says to compare lines as JSON: one message type, two key orders."""
    orders = {
        tuple(json.loads(line)["event"]["action"])
        for line in log_lines
        if '"action": {' in line and '"event"' in line
    }
    assert len(orders) > 1
