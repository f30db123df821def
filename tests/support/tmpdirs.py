"""The test run's temporary directories, removed when the run ends.

pytest keeps each ``tmp_path`` under ``$TMPDIR/pytest-of-<user>/pytest-<N>`` for the last three runs
(``tmp_path_retention_count``), and those hold minion configs with the run's tokens. Here the run's
``--basetemp`` is a private directory of its own (0700), removed at the end of the run, so a test run
leaves nothing behind in ``/tmp``. An explicit ``--basetemp`` is the caller's and is left alone.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

_OWN = pytest.StashKey[Path]()


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Before pytest's own ``tmp_path_factory`` reads it (``_pytest/tmpdir.py`` ``pytest_configure``)."""
    if config.option.basetemp is None:
        path = Path(tempfile.mkdtemp(prefix="salt-proxmox-tests-"))
        config.option.basetemp = str(path)
        config.stash[_OWN] = path


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    path = config.stash.get(_OWN, None)
    if path is not None:
        shutil.rmtree(path, ignore_errors=True)
