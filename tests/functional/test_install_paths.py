"""The two ways Salt users load an extension, each proven in an environment that has Salt but not this
project unless the test puts it there (tests/support/venvs.py):

- **pip-installed**: the wheel built from this tree (``pip wheel --no-deps``) installed with
  ``--no-deps``; Salt finds ``proxmox`` and ``proxmox_lxc`` through the ``salt.loader`` entry point,
  with a file_roots that holds the formula's SLS only, so nothing could have been synced. The
  development venv's editable install is checked the same way.
- **synced from file_roots**: ``saltutil.sync_all`` copies ``_modules``, ``_states``, ``_output`` (the
  ``proxmox_plan`` outputter), ``_grains`` (the ``salt_proxmox:owned`` grain) and
  ``_utils/salt_proxmox`` (the library) from ``formula/`` into the minion's extension_modules. Salt
  puts the synced utils directory on ``sys.path`` while it loads execution modules and grains (Salt
  3008 ``salt/loader/lazy.py``: ``extra_module_dirs``, the utils dirs), so the synced ``proxmox``
  module's ``import salt_proxmox`` finds the synced library; nowhere else can it be imported.

Each way then runs plan → apply → plan with ``salt-call --local`` against a fresh fake cluster, and a
plan printed with ``--out=proxmox_plan``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from salt_proxmox.ownership.files import FileStore
from salt_proxmox.ownership.stores import ROWS_FILE
from tests.support.saltrun import FORMULA, REPO, salt_call, salt_call_text, write_minion_config
from tests.support.venvs import deps_venv, imports, pip_install
from tests.support.ways import Estate, assert_no_secret, plan_apply_plan, timed

pytestmark = pytest.mark.functional

# What a wheel is built from: the files setup.cfg reads and the packages it lists.
SOURCES = (
    "setup.cfg",
    "pyproject.toml",
    "README.md",
    "salt_proxmox",
    "saltext_proxmox",
    "_modules",
    "_states",
    "_output",
    "_runners",
)


def sls_only_roots(tmp_path: Path) -> Path:
    """A file_roots with the formula's SLS and no ``_modules``/``_states``/``_utils``: nothing to sync."""
    roots = tmp_path / "sls-only"
    roots.mkdir()
    (roots / "proxmox").symlink_to(FORMULA / "proxmox")
    return roots


def estate_of(fresh_cluster, bao_creds) -> Estate:
    seeded = fresh_cluster.seeded
    secrets = [seeded.read_token[1], seeded.provision_token[1], bao_creds["token"]]
    return Estate(
        cluster=fresh_cluster, bao_url=bao_creds["url"], bao_token=bao_creds["token"], secrets=secrets
    )


def run_formula(way: str, estate: Estate, config_dir: Path, salt_call_bin: Path) -> None:
    """plan → apply → plan through that salt-call; no secret in its outputs or grains."""

    def run(test: bool) -> tuple[object, str]:
        args = ["state.apply", "proxmox"] + (["test=True"] if test else [])
        return salt_call(config_dir, *args, salt_call_bin=salt_call_bin)

    outputs = plan_apply_plan(estate, way, run)
    texts = {f"run {n}": out for n, out in enumerate(outputs)}
    texts["rows file"] = (config_dir / ROWS_FILE).read_text()
    assert_no_secret(texts, estate.secrets)
    # The salt_proxmox:owned grain (this distribution's grains module) shows the rows file.
    owned, _ = salt_call(config_dir, "grains.get", "salt_proxmox:owned", salt_call_bin=salt_call_bin)
    assert owned == FileStore(config_dir / ROWS_FILE).load() and owned, owned


def loaded(config_dir: Path, salt_call_bin: Path) -> tuple[bool, bool]:
    """Whether that salt-call lists the execution module ``proxmox`` (``sys.list_modules``) and the
    state module ``proxmox_lxc`` (``sys.list_state_modules``)."""
    modules, _ = salt_call(config_dir, "sys.list_modules", "proxmox*", salt_call_bin=salt_call_bin)
    states, _ = salt_call(config_dir, "sys.list_state_modules", "proxmox*", salt_call_bin=salt_call_bin)
    return "proxmox" in modules, "proxmox_lxc" in states


def build_wheel(tmp_path: Path) -> Path:
    """``pip wheel --no-deps`` of a copy of this tree (the build leaves build/ and *.egg-info behind,
    which must not land in the shared checkout); returns the wheel."""
    source = tmp_path / "source"
    source.mkdir()
    for name in SOURCES:
        origin = REPO / name
        if origin.is_dir():
            shutil.copytree(origin, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(origin, source / name)
    dist = tmp_path / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            dist,
            source,
        ],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    (wheel,) = dist.glob("salt_proxmox-*.whl")
    return wheel


def test_the_editable_install_loads_through_the_entry_point(tmp_path: Path) -> None:
    config_dir = tmp_path / "etc"
    write_minion_config(
        config_dir, "https://127.0.0.1:9", "", extra={"file_roots": {"base": [str(sls_only_roots(tmp_path))]}}
    )
    here = Path(sys.executable).parent / "salt-call"
    assert loaded(config_dir, here) == (True, True)


def test_a_wheel_installed_with_pip_loads_without_a_sync(tmp_path: Path, fresh_cluster, bao_creds) -> None:
    way = "pip-installed wheel (salt-call)"
    with timed(way, "build wheel + venv + install"):
        wheel = build_wheel(tmp_path)
        python = deps_venv(tmp_path / "venv")
        assert not imports(python, "salt_proxmox", tmp_path), "the venv must start without salt-proxmox"
        pip_install(python, "--no-deps", str(wheel))

    # Every package of the library is in the wheel (setup.cfg lists them one by one).
    packaged = {Path(name).parent.as_posix() for name in zipfile.ZipFile(wheel).namelist()}
    in_tree = {p.parent.relative_to(REPO).as_posix() for p in (REPO / "salt_proxmox").rglob("__init__.py")}
    assert in_tree <= packaged, f"setup.cfg [options] packages misses {sorted(in_tree - packaged)}"

    config_dir = tmp_path / "etc"
    write_minion_config(
        config_dir,
        fresh_cluster.url,
        fresh_cluster.cafile,
        openbao=bao_creds,
        extra={"file_roots": {"base": [str(sls_only_roots(tmp_path))]}},
    )
    salt_call_bin = python.parent / "salt-call"
    assert loaded(config_dir, salt_call_bin) == (True, True)
    where = subprocess.run(
        [python, "-c", "import salt_proxmox; print(salt_proxmox.__file__)"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert where.startswith(str(tmp_path / "venv")), where
    extmods = config_dir / "root" / "var" / "cache" / "salt" / "minion" / "extmods"
    assert not list(extmods.rglob("*.py")), "nothing was synced"

    run_formula(way, estate_of(fresh_cluster, bao_creds), config_dir, salt_call_bin)
    assert_plan_outputter(config_dir, salt_call_bin)


def assert_plan_outputter(config_dir: Path, salt_call_bin: Path) -> None:
    """The ``proxmox_plan`` outputter is loaded the same way: a clean plan ends in its summary line."""
    text = salt_call_text(config_dir, "state.apply", "proxmox", "test=True", salt_call_bin=salt_call_bin)
    assert "Plan: 0 to create, 0 to update, 0 to destroy, 0 pending restart, 0 refused, " in text, text


def test_modules_synced_from_file_roots_bring_the_library(tmp_path: Path, fresh_cluster, bao_creds) -> None:
    way = "synced from file_roots (salt-call)"
    python = deps_venv(tmp_path / "venv")
    salt_call_bin = python.parent / "salt-call"
    assert not imports(python, "salt_proxmox", tmp_path)
    config_dir = tmp_path / "etc"
    write_minion_config(config_dir, fresh_cluster.url, fresh_cluster.cafile, openbao=bao_creds)
    assert loaded(config_dir, salt_call_bin) == (False, False)

    with timed(way, "saltutil.sync_all"):
        synced, _ = salt_call(config_dir, "saltutil.sync_all", salt_call_bin=salt_call_bin)
    assert "modules.proxmox" in synced["modules"] and "states.proxmox_lxc" in synced["states"]
    assert "utils.salt_proxmox.ownership.keeper" in synced["utils"]
    assert "output.proxmox_plan" in synced["output"]
    assert "grains.proxmox_owned" in synced["grains"]
    assert loaded(config_dir, salt_call_bin) == (True, True)
    # Outside Salt's loader the library is still nowhere to import: only the synced copy serves.
    assert not imports(python, "salt_proxmox", tmp_path)

    run_formula(way, estate_of(fresh_cluster, bao_creds), config_dir, salt_call_bin)
    assert_plan_outputter(config_dir, salt_call_bin)
