"""The Python the README claims is the one the tests prove: README.md's "Python 3.N", setup.cfg's
``python_requires = >=3.N`` and, in CI (``CI=true``, as ``.ci/run`` runs), the interpreter itself."""

from __future__ import annotations

import configparser
import os
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def claimed() -> tuple[int, int]:
    """The Python version the README's "Try it" section names."""
    match = re.search(r"On a fresh machine with Python (\d+)\.(\d+)\b", (REPO / "README.md").read_text())
    assert match, "README.md's Try it section names no Python version"
    return int(match.group(1)), int(match.group(2))


def test_readme_claim_is_the_package_floor_and_the_python_that_runs():
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    major, minor = claimed()
    assert config["options"]["python_requires"].strip() == f">={major}.{minor}"
    assert sys.version_info[:2] >= (major, minor), "the tests run on a Python older than the claim"
    if os.environ.get("CI") == "true":
        # CI is the proof of the claim: it runs every test on exactly the Python the README names.
        assert sys.version_info[:2] == (major, minor), (
            f"CI runs {sys.version}, the README claims {major}.{minor}"
        )
