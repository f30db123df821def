"""The demo: plan → apply → plan of the example estate against a local fake cluster and OpenBao.

Starts fakepve (seeded: two nodes, storages, a container template, an installer ISO, the running
container the example pillar adopts, a stopped VM on pve2 it declares on pve1 (and migrates), a
cloud-init VM template the example pillar clones, the body its download URL serves, a network
change staged on pve2 by hand and never applied, and API tokens for a ``read`` and a ``provision``
user) on a free loopback port, the staging PBS (``tests.support.pbs``: the example's ``pbs`` storage
backs up to its datastore), starts an OpenBao dev server on loopback with the PVE tokens published at
``proxmox/creds/<role>`` and the PBS ones at ``proxmox/creds/pbs/<role>``, gives the target a root lane
(``tests.support.lanes.node_lane``: a fake ``pvesh`` forwarding as root@pam on pve1, the node's
``/etc/pve`` and ``/run/lock`` and storage ``snippets``, a ``dir`` storage taking snippets, in temporary
directories), so that ``top.sls`` adds ``node.sls`` (a container with a bind mount, a cloud-init snippet
the cloned VM's ``cicustom`` names), writes a minion config in a private temporary directory, and runs
``salt-call --local state.apply proxmox`` three times: ``test=True``, for real, ``test=True``, each
printed by the ``proxmox_plan`` outputter (``_output/proxmox_plan.py``, what ``--out=proxmox_plan``
prints).

Exit status: 0 when no state failed, the apply wrote only what the first plan showed, the guests the
example declares ``status: running`` (web, CT 150; app, VM 210) were started by one awaited start
task each and run, the PBS token the ``pbs`` storage got never shows in an output, the bind mount was
written by root@pam through the lane and the snippet holds its declared content (which no output and no
rows file holds), the ISO the example downloads (``proxmox:content``: the fake serves the body whose
sha256 the pillar declares at its URL, nothing is fetched) is listed on every node of ``local``, the VM
the example declares on another node than the seed's with ``migrate: true`` (build, VM 220, stopped on
pve2) now lives on its declared node and is still stopped, and the second plan is clean, reading their
status and writing nothing to PVE or PBS; 1 otherwise. Everything it started is stopped before it exits.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
#: The container of ``pillar_examples/node.sls`` with a bind mount point.
FILES_VMID = 153

import requests  # noqa: E402

from salt_proxmox.ownership.stores import ROWS_FILE  # noqa: E402
from tests.support.cluster import (  # noqa: E402
    DOWNLOAD_BODY,
    DOWNLOAD_URL,
    DOWNLOAD_VOLID,
    ServedCluster,
)
from tests.support.lanes import SNIPPET_STORAGE, api_writes, node_lane  # noqa: E402
from tests.support.openbao import DevOpenBao, creds_token, publish_cluster, publish_pbs  # noqa: E402
from tests.support.pbs import ServedPbs  # noqa: E402
from tests.support.saltrun import (  # noqa: E402
    pillar_secrets,
    salt_call,
    snippet_contents,
    state_rows,
    write_minion_config,
)
from tests.support.ways import MIGRATED, STARTED, expected_power, power_requests  # noqa: E402


def _plan_outputter():
    """The ``proxmox_plan`` outputter module, loaded from the tree as Salt's loader loads it."""
    spec = importlib.util.spec_from_file_location("proxmox_plan", REPO / "_output" / "proxmox_plan.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _read(cluster: ServedCluster, path: str, **params: str) -> object:
    """``GET /api2/json/<path>`` of the fake cluster with the read token, as a client of PVE reads it."""
    token_id, secret = cluster.seeded.read_token
    answer = requests.get(
        f"{cluster.url}/api2/json/{path}",
        params=params,
        headers={"Authorization": f"PVEAPIToken={token_id}={secret}"},
        verify=cluster.cafile,
        timeout=30,
    )
    answer.raise_for_status()
    return answer.json()["data"]


def _missing_download(cluster: ServedCluster) -> list[str]:
    """The nodes of the download's storage (its ``nodes``, else every node) whose content listing (pve-storage
    ``API2/Storage/Content.pm`` ``index``) holds no ``DOWNLOAD_VOLID`` of ``DOWNLOAD_BODY``'s size."""
    storage, _, volname = DOWNLOAD_VOLID.partition(":")
    config = next(row for row in _read(cluster, "storage") if row.get("storage") == storage)
    nodes = str(config.get("nodes") or "").split(",") if config.get("nodes") else None
    nodes = nodes or sorted(row["node"] for row in _read(cluster, "nodes"))
    missing = []
    for node in nodes:
        listed = _read(cluster, f"nodes/{node}/storage/{storage}/content", content=volname.split("/")[0])
        if not any(r.get("volid") == DOWNLOAD_VOLID and r.get("size") == len(DOWNLOAD_BODY) for r in listed):
            missing.append(node)
    return missing


def main() -> int:
    """Run the demo; returns the exit status."""
    failures: list[str] = []
    workdir = Path(tempfile.mkdtemp(prefix="salt-proxmox-demo-"))
    workdir.chmod(0o700)
    try:
        with ServedCluster() as cluster, DevOpenBao() as bao, ServedPbs() as pbs:
            # Somebody raised vmbr0's MTU on pve2 in the GUI and never pressed "Apply Configuration".
            interfaces = cluster.pve.interfaces("pve2")
            interfaces["vmbr0"]["mtu"] = "9000"
            cluster.pve.stage("pve2", interfaces)
            # What the example's download URL holds: the body whose sha256 proxmox:content declares (the
            # seed serves it too, so the tests and the sandbox plan the same download; nothing is fetched).
            cluster.pve.content_urls[DOWNLOAD_URL] = DOWNLOAD_BODY
            client = bao.client()
            publish_cluster(client, cluster.seeded.read_token, cluster.seeded.provision_token)
            publish_pbs(client, pbs.read_token, pbs.provision_token)
            token = creds_token(client)
            secrets = [cluster.seeded.read_token[1], cluster.seeded.provision_token[1], token, bao.root_token]
            secrets += [pbs.read_token[1], pbs.provision_token[1], *pillar_secrets(), *snippet_contents()]
            lane = node_lane(cluster, workdir / "node")
            config_dir = workdir / "etc"
            write_minion_config(
                config_dir,
                cluster.url,
                cluster.cafile,
                openbao={"url": bao.url, "token": token},
                pbs={"url": pbs.url, "cafile": pbs.cafile},
                root_lane=lane,
            )
            print(
                f"fake PVE cluster at {cluster.url}; OpenBao dev server at {bao.url}; fake PBS at {pbs.url}"
            )
            print(f"root lane: {lane['pvesh']} (root@pam on pve1)")
            print(f"minion config: {config_dir / 'minion'}\n")
            outputter = _plan_outputter()
            colours = outputter.colours(sys.stdout.isatty())
            runs = []
            outputs = []
            for title, args in (
                ("plan (test=True)", ["state.apply", "proxmox", "test=True"]),
                ("apply", ["state.apply", "proxmox"]),
                ("plan again (test=True)", ["state.apply", "proxmox", "test=True"]),
            ):
                before = len(cluster.pve.requests)
                pbs_before = len(pbs.pbs.requests)
                started = time.monotonic()
                ret, raw = salt_call(config_dir, *args)
                outputs.append(raw)
                elapsed = time.monotonic() - started
                rows = state_rows(ret)
                runs.append((rows, cluster.pve.requests[before:]))
                pbs_writes = [m for m, _, _ in pbs.pbs.requests[pbs_before:] if m != "GET"]
                notes = [note for r in ret.values() if isinstance(r, dict) for note in r.get("notes") or ()]
                if not any(note.startswith("backup coverage: ") for note in notes):
                    failures.append(f"{title}: the run did not note its backup coverage")
                print(f"== {title} — {elapsed:.1f}s, {len(cluster.pve.requests) - before} PVE requests ==")
                print(outputter.render({"local": ret}, test="test=True" in args, colours=colours))
                print()
                if any(secret and secret in raw for secret in secrets):
                    failures.append(f"{title}: a credential or pillar secret appeared in salt-call's output")
                if any(row["result"] is False for row in rows):
                    failures.append(f"{title}: a state failed")
            plan, apply, replan = (rows for rows, _ in runs)
            planned = {row["id"]: sorted(row["changes"]) for row in plan}
            applied = {row["id"]: sorted(row["changes"]) for row in apply}
            if planned != applied:
                failures.append("the apply's changes differ from what the plan showed")
            if any(row["changes"] or row["result"] is not True for row in replan):
                failures.append("the second plan is not clean")
            if api_writes(runs[2][1]):
                failures.append("the second plan sent a write to PVE")
            if pbs_writes:
                failures.append("the second plan sent a write to PBS")
            # The PBS token the pbs storage made: its secret is in OpenBao and PVE, never in an output.
            made = [secret for token_id, secret in pbs.pbs.token_secrets.items() if "!pve-" in token_id]
            if not made:
                failures.append("the apply made no PBS token for the pbs storage")
            if any(secret in raw for secret in made for raw in outputs):
                failures.append("the PBS token's secret appeared in salt-call's output")
            secrets += made
            if any(planned[sid].count("status") != 1 for sid in STARTED):
                failures.append("the plan did not say web and app would be started")
            if power_requests(runs[0][1]) != expected_power("plan"):
                failures.append("the plan read a power state other than the migrated VM's")
            if power_requests(runs[1][1]) != expected_power("apply"):
                failures.append("the apply did not start web and app by one awaited start task each")
            if power_requests(runs[2][1]) != expected_power("replan"):
                failures.append("the second plan did not read web's and app's status/current")
            # Through the lane: the bind mount written by root@pam, the snippet as declared on the node.
            mounted = cluster.pve.ct(FILES_VMID)
            if mounted is None or not str(mounted.config.get("mp0", "")).startswith("/srv/share,"):
                failures.append(f"CT {FILES_VMID} has not its bind mount mp0")
            if not any(
                who == "root@pam" and f"/lxc/{FILES_VMID}" in path for _, path, who in cluster.pve.senders
            ):
                failures.append(f"CT {FILES_VMID}'s bind mount did not go through the root lane")
            snippet = workdir / "node" / "store" / "snippets" / "ci-user.yaml"
            if not snippet.is_file() or snippet.read_text() not in snippet_contents():
                failures.append(f"snippet {SNIPPET_STORAGE}:snippets/ci-user.yaml is not as declared")
            for _, _, vmid in STARTED.values():
                now, _ = salt_call(config_dir, "proxmox.guest_status", f"vmid={vmid}")
                if now.get("status") != "running":
                    failures.append(f"guest {vmid} does not run after the apply: {now.get('status')}")
            # The download: on every node of its storage, as declared; the migrated VM: on its declared node.
            if missing := _missing_download(cluster):
                failures.append(f"{DOWNLOAD_VOLID} is not listed on node(s) {', '.join(missing)}")
            for sid, (_, live, declared, vmid) in MIGRATED.items():
                if planned[sid] != ["node"]:
                    failures.append(f"the plan did not say VM {vmid} would migrate from {live} to {declared}")
                now, _ = salt_call(config_dir, "proxmox.guest_status", f"vmid={vmid}")
                if (now.get("node"), now.get("status")) != (declared, "stopped"):
                    failures.append(f"VM {vmid} is not stopped on {declared} after the apply: {now}")
            # What the estate needs of each credential, and what each token lacks (the read token's own
            # privileges are read; the provision token's id is known once minted).
            needed, _ = salt_call(config_dir, "proxmox.privileges_needed", "mods=proxmox")
            roles = (needed.get("proxmox") or {}).get("roles") or {}
            print("== privileges the estate needs (proxmox.privileges_needed) ==")
            for role, entry in sorted(roles.items()):
                print(f"{role}: {', '.join(entry['privs'])}")
            lacking = (needed.get("missing") or {}).get("read")
            print(f"the read token lacks: {lacking or 'nothing'}\n")
            if not roles or lacking:
                failures.append(
                    "proxmox.privileges_needed found no role, or the read token lacks a privilege"
                )
            rows_file = config_dir / ROWS_FILE
            grains = rows_file.read_text() if rows_file.exists() else ""
            if any(secret and secret in grains for secret in secrets):
                failures.append("a credential appeared in the ownership rows file")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if failures:
        print("DEMO FAILED:\n  " + "\n  ".join(failures))
        return 1
    print(
        "Demo passed: the plan showed what the apply wrote (web and app started; the bind mount and the"
        " snippet through the root lane; the ISO downloaded on every node of local; build migrated to its"
        " declared node), and the second plan is clean."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
