"""Many clusters from one master: one minion per cluster, each given its target, connection and OpenBao
path by the master's pillar ``top.sls`` (the layout ``docs/running.md`` documents), run at once from
the master with the ``proxmox_plan`` outputter. One cluster is stopped: its minion's states all fail
with "no member of target beta answered", which the output names once, as unreachable, while the
other cluster applies; the ``salt`` command exits non-zero.

The exit code: ``salt`` (not ``--static``) exits 1 when a minion's job returned a non-zero retcode
(salt/cli/salt.py ``run``: "Minions returned with non-zero exit code"), and ``state.apply`` sets
retcode 2 when a state failed (salt/modules/state.py ``_set_retcode``). ``salt --static`` prints
every minion at once, so the outputter ends it with one summary across the fleet, but Salt 3006-3008
exits 0 whatever the states did: its static branch discards each job's retcode (salt/cli/salt.py
``_run_batch``: ``for res, _ in batch.run()``); the last test pins that.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from saltfactories.utils import random_string

from tests.support.cluster import ServedCluster
from tests.support.openbao import DevOpenBao, publish_creds, write_policy
from tests.support.saltrun import FORMULA
from tests.support.ways import started

pytestmark = pytest.mark.functional

WAY = "master + two minions"
JOB_TIMEOUT = 120

#: The estate each cluster declares (its own pillar file): three states.
ESTATE = {
    "pools": {"prod": {"comment": "Production"}, "lab": {"comment": "Lab"}},
    "firewall_aliases": {"office_net": {"cidr": "10.20.0.0/24"}},
}


def _cluster_pillar(name: str, cluster: ServedCluster, cafile: Path, bao: DevOpenBao, token: str) -> dict:
    """One cluster's pillar: its target (the connection), where OpenBao keeps its tokens, the token
    that may read them, and its estate."""
    return {
        "proxmox": {
            "targets": {
                name: {
                    "members": [cluster.url],
                    "verify": str(cafile),
                    "credentials": {"source": "openbao", "path": f"proxmox/{name}/creds"},
                }
            },
            **ESTATE,
        },
        "openbao": {"url": bao.url, "verify": True, "auth": {"method": "token", "token": token}},
    }


@pytest.fixture(scope="module")
def fleet(salt_factories: Any, openbao: DevOpenBao, tmp_path_factory: Any) -> Iterator[dict[str, Any]]:
    """A master serving the formula and a per-cluster pillar, cluster alpha served, cluster beta
    stopped, and a minion for each."""
    root = tmp_path_factory.mktemp("fleet")
    pillar = root / "pillar"
    (pillar / "clusters").mkdir(parents=True)
    ids = {name: random_string(f"pve-{name}-") for name in ("alpha", "beta")}
    client = openbao.client()
    with ServedCluster() as alpha, ServedCluster() as beta:
        for name, cluster in (("alpha", alpha), ("beta", beta)):
            assert cluster.seeded is not None
            path = f"proxmox/{name}/creds"
            publish_creds(client, path, "read", *cluster.seeded.read_token)
            publish_creds(client, path, "provision", *cluster.seeded.provision_token)
            # Each minion's token reads its own cluster's tokens only.
            write_policy(
                client, f"salt-proxmox-{name}", f'path "{path}/*" {{\n  capabilities = ["read"]\n}}\n'
            )
            token = client.auth.token.create(policies=[f"salt-proxmox-{name}"], ttl="1h")["auth"][
                "client_token"
            ]
            cafile = root / f"{name}.crt"
            shutil.copy(cluster.cafile, cafile)
            text = yaml.safe_dump(_cluster_pillar(name, cluster, cafile, openbao, token))
            (pillar / "clusters" / f"{name}.sls").write_text(text)
        beta.stop()  # its port now refuses connections
        top = {"base": {f"{ids[name]}": [f"clusters.{name}"] for name in ids}}
        (pillar / "top.sls").write_text(yaml.safe_dump(top))
        master = salt_factories.salt_master_daemon(
            random_string("pve-master-"),
            overrides={
                "interface": "127.0.0.1",
                "file_roots": {"base": [str(FORMULA)]},
                "pillar_roots": {"base": [str(pillar)]},
            },
        )
        with started(WAY, "start salt-master", master):
            minions = [master.salt_minion_daemon(ids[name]) for name in ids]
            with (
                started(WAY, "start salt-minion alpha", minions[0]),
                started(WAY, "start salt-minion beta", minions[1]),
            ):
                yield {"master": master, "ids": ids, "alpha": alpha}


def _run(fleet: dict[str, Any], *args: str) -> Any:
    salt = fleet["master"].salt_cli(timeout=JOB_TIMEOUT)
    target = ",".join(fleet["ids"].values())
    return salt.run(
        "-L", "state.apply", "proxmox", *args, "--out=proxmox_plan", "--no-color", minion_tgt=target
    )


def test_one_cluster_stopped_the_other_applies_and_the_master_says_which(fleet: dict[str, Any]) -> None:
    alpha, beta = fleet["ids"]["alpha"], fleet["ids"]["beta"]
    ret = _run(fleet)
    text = ret.stdout
    assert ret.returncode != 0, text + ret.stderr
    lines = text.splitlines()
    # Each minion under its name and its cluster; the stopped cluster in one line, not one per state.
    assert f"{alpha} (cluster alpha):" in lines and f"{beta} (cluster beta):" in lines, text
    assert sum("cluster beta unreachable" in line for line in lines) == 1, text
    assert "! cluster beta unreachable: 3 states not run" in lines, text
    assert sum("no member of target beta answered" in line for line in lines) == 1, text
    assert not any(line.startswith("! proxmox-") for line in lines), "no state is listed as refused"
    # Without --static Salt prints each minion as it returns, each with its own summary.
    assert "Apply: 3 created, 0 updated, 0 destroyed, 0 pending restart, 0 failed, 0 no change." in lines, (
        text
    )
    assert (
        "Apply: 0 created, 0 updated, 0 destroyed, 0 pending restart, 0 failed, 3 unreachable, 0 no change."
        in lines
    ), text
    pve = fleet["alpha"].pve
    assert {"prod", "lab"} <= set(pve.pools), "the reachable cluster applied"


def test_static_ends_with_one_summary_across_the_fleet_and_salt_exits_0(fleet: dict[str, Any]) -> None:
    """``--static``: every minion in one output, in minion order, one summary; alpha has nothing
    left to do (the test above applied it). Salt's exit code is 0 regardless (the module docstring)."""
    alpha, beta = fleet["ids"]["alpha"], fleet["ids"]["beta"]
    ret = _run(fleet, "test=True", "--static")
    lines = ret.stdout.splitlines()
    assert lines.index(f"{alpha} (cluster alpha):") < lines.index(f"{beta} (cluster beta):"), ret.stdout
    summaries = [line for line in lines if line.startswith(("Plan:", "Apply:"))]
    assert summaries == [
        "Plan: 0 to create, 0 to update, 0 to destroy, 0 pending restart, 0 refused, 3 unreachable, 3 no change."  # noqa: E501
    ], ret.stdout
    assert f"  minion {alpha} (cluster alpha): " in "\n".join(lines)
    assert f"  minion {beta} (cluster beta): " in "\n".join(lines)
    # Salt 3006-3008 salt/cli/salt.py _run_batch: the static branch drops every job's retcode.
    assert ret.returncode == 0


def test_the_runner_prints_one_summary_across_the_fleet_and_exits_1(fleet: dict[str, Any]) -> None:
    """``salt-run proxmox.apply``: every minion's return at once, one summary, and the exit code
    ``salt --static`` cannot give (``_runners/proxmox.py``)."""
    alpha, beta = fleet["ids"]["alpha"], fleet["ids"]["beta"]
    run = fleet["master"].salt_run_cli(timeout=JOB_TIMEOUT)
    for test, label in ((["test=True"], "Plan:"), ([], "Apply:")):
        ret = run.run(
            "proxmox.apply", f"tgt={alpha},{beta}", "tgt_type=list", *test, "--out=proxmox_plan", "--no-color"
        )
        lines = ret.stdout.splitlines()
        assert ret.returncode == 1, ret.stdout + ret.stderr
        assert lines.index(f"{alpha} (cluster alpha):") < lines.index(f"{beta} (cluster beta):"), ret.stdout
        assert sum("cluster beta unreachable" in line for line in lines) == 1, ret.stdout
        (summary,) = [line for line in lines if line.startswith(("Plan:", "Apply:"))]
        assert summary.startswith(label) and "3 unreachable, 3 no change." in summary, ret.stdout
    # Both clusters answering: a clean plan exits 0.
    ret = run.run("proxmox.apply", f"tgt={alpha}", "test=True", "--out=proxmox_plan", "--no-color")
    assert ret.returncode == 0, ret.stdout + ret.stderr
