"""What a built wheel holds: our packages, and nothing of the Node sample bot's folder.

setuptools' package discovery (pyproject.toml) takes every folder under an included package
as a namespace package, so ``sample_bots/node/node_modules/*`` (present once the Node bot's
packages are installed) would ship, ``.proto`` files and all. The configuration is read with
setuptools itself, as a build reads it.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from setuptools.config.pyprojecttoml import apply_configuration
from setuptools.dist import Distribution

ROOT = Path(__file__).resolve().parents[1]


def test_the_wheel_holds_our_packages_only() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # setuptools' own deprecation notes about the table
        dist = apply_configuration(Distribution(), ROOT / "pyproject.toml")
    packages = set(dist.packages or ())
    assert {"referee", "referee.tournament", "sdk", "sample_bots", "thirtyone.v1"} <= packages
    assert {p.split(".")[0] for p in packages} == {"referee", "sdk", "sample_bots", "thirtyone"}
    # sample_bots/node/proto is in the repository, so this holds with or without node_modules.
    assert not [p for p in packages if p.startswith("sample_bots.node")], sorted(packages)
