"""salt-ssh, masterless on the target: a local sshd (pytest-salt-factories, 127.0.0.1) is the target
host; salt-ssh ships Salt's thin plus ``thin_extra_mods: salt_proxmox,hvac`` (the library and the one
dependency Salt's thin lacks), and with each state run the formula's ``_modules``/``_states`` from
file_roots. The targets and OpenBao blocks travel in pillar (rendered on the master, sent with the state
run), never on a command line; the target's roster ``minion_opts`` name the ownership file.

Ownership: a salt-ssh target's grains file is ``<thin_dir>/grains`` (``grains.setval`` writes next to
the config salt-ssh writes, ``<thin_dir>/minion``), and salt-ssh deletes the whole thin dir whenever it
redeploys the thin (a new Salt, a new salt_proxmox) or runs with ``--wipe``. So the rows go to the JSON
file ``proxmox:ownership_file`` names, outside the thin dir; the test shows a grain set over salt-ssh
vanishing with a wiped thin dir while the ownership file carries the next plan clean.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from saltfactories.utils import random_string, running_username

from salt_proxmox.ownership.files import FileStore
from tests.support.formula import formula
from tests.support.guests import declaration
from tests.support.saltrun import FORMULA, PILLAR
from tests.support.ways import (
    OWNED_ROWS,
    Estate,
    assert_no_secret,
    owned_phases,
    plan_apply_plan,
    started,
    text_files,
    timed,
)

pytestmark = pytest.mark.functional

WAY = "salt-ssh"
TARGET = "pve-manager"
# Seconds a salt-ssh run may take (the first one builds and copies the thin).
RUN_TIMEOUT = 180
SSHD = "/usr/sbin/sshd"
PRIVSEP_DIR = Path("/run/sshd")
SFTP_SERVER = "/usr/lib/openssh/sftp-server"
TARGET_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


@pytest.fixture(scope="module")
def sshd(salt_factories: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """sshd on 127.0.0.1 and a free port, with its own host keys and the client key it authorizes."""
    if shutil.which("sshd") is None and not Path(SSHD).exists():
        pytest.fail("salt-ssh tests need sshd: apt-get install -y openssh-server")
    # sshd refuses to start without its privilege separation directory, which the Debian package's
    # service creates at boot; a container that never ran the service does not have it.
    if not PRIVSEP_DIR.is_dir():
        if os.geteuid() != 0:
            pytest.fail(f"sshd needs {PRIVSEP_DIR}: run as root once, or mkdir -m 0755 {PRIVSEP_DIR} as root")
        PRIVSEP_DIR.mkdir(mode=0o755)
    factory = salt_factories.get_sshd_daemon(
        config_dir=tmp_path_factory.mktemp("sshd"),
        listen_address="127.0.0.1",
        script_name=shutil.which("sshd") or SSHD,
        sshd_config_dict={
            # Its keys live under /tmp, which is world-writable: StrictModes would refuse authorized_keys.
            "StrictModes": "no",
            # scp (OpenSSH 9) copies over SFTP; salt-ssh sends the thin and each state run with scp.
            "Subsystem": f"sftp {SFTP_SERVER}",
        },
    )
    with started(WAY, "start sshd", factory):
        yield factory


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A private directory: the pillar, the roster, known_hosts, the thin dir and the ownership file."""
    base = tmp_path_factory.mktemp("salt-ssh")
    base.chmod(0o700)
    return {
        "base": base,
        "pillar": base / "pillar",
        "roster": base / "roster",
        "known_hosts": base / "known_hosts",
        "thin_dir": base / "thin",
        "owned": base / "owned.json",
    }


@pytest.fixture(scope="module")
def salt_ssh(salt_factories: Any, sshd: Any, estate: Estate, layout: dict[str, Path]) -> Any:
    """The salt-ssh CLI of a master config that serves the formula and the example pillar."""
    pillar = layout["pillar"]
    pillar.mkdir(mode=0o700)
    # This top file comes first in pillar_roots, so it is the one used; proxmox.sls and
    # secrets.sls are the example's.
    top = {"base": {"*": ["proxmox", "secrets", "proxmox_connection"]}}
    (pillar / "top.sls").write_text(yaml.safe_dump(top))
    connection = pillar / "proxmox_connection.sls"
    connection.write_text(
        yaml.safe_dump({"proxmox": estate.proxmox_config(), "openbao": estate.openbao_config()})
    )
    connection.chmod(0o600)
    layout["known_hosts"].write_text("\n".join(sshd.get_host_keys()) + "\n")
    roster = {
        TARGET: {
            "host": sshd.listen_address,
            "port": sshd.listen_port,
            "user": running_username(),
            "priv": str(sshd.client_key),
            "thin_dir": str(layout["thin_dir"]),
            # The system's python3, which has neither Salt nor salt_proxmox nor hvac: all of them come
            # with the thin. (Through pyenv's shims, first on root's PATH here, Salt's shim fails.)
            "set_path": TARGET_PATH,
            "minion_opts": {"proxmox": {"ownership_file": str(layout["owned"])}},
        }
    }
    layout["roster"].write_text(yaml.safe_dump(roster))
    master = salt_factories.salt_master_daemon(
        random_string("pve-ssh-master-"),
        overrides={
            "interface": "127.0.0.1",
            "file_roots": {"base": [str(FORMULA)]},
            "pillar_roots": {"base": [str(pillar), str(PILLAR)]},
            "thin_extra_mods": "salt_proxmox,hvac,cryptography",
            "known_hosts_file": str(layout["known_hosts"]),
        },
    )
    return master.salt_ssh_cli(roster_file=str(layout["roster"]), target_host=TARGET, timeout=RUN_TIMEOUT)


def test_plan_apply_plan_over_salt_ssh(salt_ssh: Any, estate: Estate, layout: dict[str, Path]) -> None:
    def run(test: bool, *flags: str) -> tuple[Any, str]:
        args = [*flags, "state.apply", "proxmox"] + (["test=True"] if test else [])
        ret = salt_ssh.run(*args, minion_tgt=TARGET)
        assert isinstance(ret.data, dict), f"no state return: {ret.stdout}\n{ret.stderr}"
        return ret.data, ret.stdout + ret.stderr

    with timed(WAY, "first run: build + copy thin"):
        ping = salt_ssh.run("test.ping", minion_tgt=TARGET)
    assert ping.data is True, f"{ping.stdout}\n{ping.stderr}"

    outputs = plan_apply_plan(estate, WAY, run)
    owned = FileStore(layout["owned"]).load()  # the snapshot, then one line per changed row
    assert owned_phases(owned) == dict.fromkeys(OWNED_ROWS, "owned")

    # A grain set over salt-ssh lands in the thin dir ...
    probe = salt_ssh.run("grains.setval", "salt_proxmox_probe", "kept?", minion_tgt=TARGET)
    assert "salt_proxmox_probe" in (layout["thin_dir"] / "grains").read_text(), probe.stdout
    # ... which --wipe deletes after the run (as a thin redeploy would), while the ownership file outlives
    # it: the next plan, on a newly deployed thin, is still clean.
    with timed(WAY, "plan with --wipe (new thin)"):
        replan, raw = run(True, "--wipe")
    outputs.append(raw)
    assert all(state["result"] is True and not state["changes"] for state in replan.values()), raw
    assert not layout["thin_dir"].exists()
    after = salt_ssh.run("grains.item", "salt_proxmox_probe", "pythonexecutable", minion_tgt=TARGET)
    assert not after.data.get("salt_proxmox_probe"), "a grain outlived a wiped thin dir"

    # What ran on the target: the system's python3, with the library and hvac from the thin and the
    # modules from file_roots; no loader error on the way.
    assert not after.data["pythonexecutable"].startswith(sys.prefix), after.data
    thin = layout["thin_dir"]
    assert (thin / "py3" / "salt_proxmox" / "ownership" / "keeper.py").is_file()
    assert (thin / "py3" / "hvac" / "__init__.py").is_file()
    log = (thin / "running_data" / "salt-call.log").read_text()
    assert "Error processing Salt Extension" not in log

    texts = {f"run {n}": out for n, out in enumerate(outputs)}
    texts["ownership file"] = layout["owned"].read_text()
    # Every file on the target (the state tarball salt-ssh leaves in the 0700 thin dir carries the
    # pillar by design, and is skipped as compressed) and on the master side (logs, caches, job returns).
    texts |= text_files(layout["thin_dir"])
    texts |= text_files(salt_ssh.config["root_dir"])
    assert_no_secret(texts, estate.secrets)


def test_over_salt_ssh_the_formula_marks_no_state_parallel(
    salt_ssh: Any, estate: Estate, layout: dict[str, Path]
) -> None:
    """Under salt-ssh the formula renders on the master (``_ssh_version`` in its options) and marks no
    state ``parallel``, even with ``task_concurrency`` above 1 and creates to make: the apply stays
    sequential. Rendered without salt-ssh, the same pillar marks the second create."""
    guests = {f"overlap{vmid}": declaration(vmid=vmid, node="pve1", mp0=None) for vmid in (3401, 3402)}
    config = estate.proxmox_config()
    ((name, target),) = config["targets"].items()
    target["task_concurrency"] = 4
    connection = layout["pillar"] / "proxmox_connection.sls"
    connection.write_text(yaml.safe_dump({"proxmox": config, "openbao": estate.openbao_config()}))
    (layout["pillar"] / "overlap.sls").write_text(yaml.safe_dump({"proxmox": {"lxc": guests}}))
    top = {"base": {"*": ["proxmox", "secrets", "proxmox_connection", "overlap"]}}
    (layout["pillar"] / "top.sls").write_text(yaml.safe_dump(top))
    ret = salt_ssh.run("state.show_sls", "proxmox", minion_tgt=TARGET)
    assert isinstance(ret.data, dict), ret.stdout + ret.stderr
    assert "proxmox-lxc-overlap3402" in ret.data, sorted(ret.data)
    assert [sid for sid, state in ret.data.items() if state.get("parallel")] == []
    marked_over_ssh = [
        sid
        for sid, state in ret.data.items()
        for args in state.values()
        if isinstance(args, list) and {"parallel": True} in args
    ]
    assert marked_over_ssh == []
    # The same render outside salt-ssh marks it (tests/unit/test_overlap.py renders the formula likewise).
    module = formula()
    module.__pillar__ = {"proxmox": {"lxc": guests}}
    module.__opts__ = {"test": False}
    module.__salt__ = {
        "config.get": lambda key, default=None: {name: target},
        "proxmox.owned": lambda sls: [],
    }
    marked = [sid for sid, state in module.run().items() for a in state.values() if {"parallel": True} in a]
    assert marked == ["proxmox-lxc-overlap3402"]
