"""Virtual environments for the install-path tests: Salt and its dependencies, and salt-proxmox only
when the test puts it there.

Installing Salt into a new environment takes minutes and the package registry; these take a second.
``deps_venv`` makes a venv (no pip) whose site-packages holds a symbolic link to every entry of the
running environment's site-packages except salt-proxmox's own — its packages, its ``.dist-info`` (so
its ``salt.loader`` entry point is gone too) and the editable-install hooks. Salt, requests, hvac and
the rest import from there as usual; ``salt_proxmox`` does not import at all until the test installs
the wheel (``pip_install``) or Salt syncs it from file_roots.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

# Top-level names in site-packages that belong to this distribution (editable or not).
OURS = ("salt_proxmox", "saltext_proxmox", "__editable__.salt_proxmox", "__editable___salt_proxmox")

# What pip writes as a console script, for the Salt commands a test runs from the new venv.
SCRIPT = """#!{python}
import sys
from salt.scripts import {function}
if __name__ == "__main__":
    sys.exit({function}())
"""


def deps_venv(path: Path) -> Path:
    """Create the venv at path (see the module docstring) with ``bin/salt-call``; returns its python."""
    venv.EnvBuilder(with_pip=False, symlinks=True).create(path)
    python = path / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    ours = Path(sysconfig.get_paths()["purelib"])
    for entry in ours.iterdir():
        if entry.name.startswith(OURS) or entry.name == "__pycache__":
            continue
        (site / entry.name).symlink_to(entry)
    for script, function in (("salt-call", "salt_call"),):
        target = path / "bin" / script
        target.write_text(SCRIPT.format(python=python, function=function))
        target.chmod(0o755)
    return python


def pip_install(python: Path, *args: str) -> None:
    """``pip install args`` into the venv of python, with this environment's pip (the venv has none)."""
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", *args],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )


def imports(python: Path, module: str, cwd: Path) -> bool:
    """Whether ``import module`` succeeds in the venv of python, run from cwd."""
    return subprocess.run([python, "-c", f"import {module}"], cwd=cwd, capture_output=True).returncode == 0
