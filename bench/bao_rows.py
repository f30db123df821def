"""Ownership rows in OpenBao, one KV version 2 entry per row against one entry per target
(docs/design.md §8, "Rows in OpenBao"), measured on the ``bao`` dev server on loopback.

    .venv/bin/python -m bench.bao_rows [--rows 1000] [--changes 50]

For each layout it prints the seconds and requests of the first ``load`` of every row (what each
run does once), the seconds per changed row (a check-and-set write after reading the row again, as
``Ownership`` does for each create's ``creating`` and ``owned``) and the bytes each change sends.
The per-target layout is written here only (``PerTarget``): the product keeps one entry per row.
"""

from __future__ import annotations

import argparse
import json
import time

import hvac.exceptions

from salt_proxmox.ownership.bao import OpenBaoStore
from salt_proxmox.ownership.keeper import Ownership
from tests.support.openbao import DevOpenBao

MOUNT = "bench"


def row(vmid: int) -> dict:
    """A guest row about the size a container's is (its declaration and fingerprint)."""
    return {
        "phase": "owned",
        "instance": f"{vmid:08d}-1f2e-4c3b-9a8d-7e6f5a4b3c2d",
        "state_id": f"bench-{vmid}",
        "declared": {
            "vmid": vmid,
            "node": "pve1",
            "hostname": f"bench-{vmid}",
            "memory": 512,
            "cores": 1,
            "rootfs": "local-lvm:4",
            "net0": "name=eth0,bridge=vmbr0,ip=dhcp",
            "ostemplate": "local:vztmpl/debian-13-standard_13.0-1_amd64.tar.zst",
        },
        "fingerprint": {"net0": "BC:24:11:00:00:01", "rootfs": f"local-lvm:vm-{vmid}-disk-0,size=4G"},
    }


class PerTarget:
    """One KV entry holding every row of a target, written check-and-set as a whole: as one JSON
    text (``{"rows": "<json>"}``), since OpenBao refuses the rows as a JSON mapping past its request
    limits (``structured_limit`` finds where)."""

    def __init__(self, client, path: str):
        self.kv, self.path, self.requests, self.sent = client.secrets.kv.v2, path, 0, 0
        self.rows: dict = {}
        self.version = 0

    def load(self) -> dict:
        self.requests += 1
        answer = self.kv.read_secret_version(self.path, mount_point=MOUNT, raise_on_deleted_version=False)
        self.rows = json.loads(answer["data"]["data"]["rows"])
        self.version = answer["data"]["metadata"]["version"]
        return self.rows

    def change(self, key: str, value: dict) -> None:
        self.load()  # the row as stored now: the whole entry
        self.rows[key] = value
        body = {"rows": json.dumps(self.rows)}
        self.sent += len(json.dumps(body))
        self.requests += 1
        written = self.kv.create_or_update_secret(self.path, body, cas=self.version, mount_point=MOUNT)
        self.version = written["data"]["version"]


def structured_limit(client, seed: dict) -> int:
    """The most rows of ``seed`` OpenBao takes as one entry ``{"rows": {<key>: <row>}}`` (a bisection;
    a larger one it refuses: "refused JSON input due to high complexity")."""
    low, high = 0, len(seed)
    keys = list(seed)
    while low < high:
        middle = (low + high + 1) // 2
        try:
            body = {"rows": {key: seed[key] for key in keys[:middle]}}
            client.secrets.kv.v2.create_or_update_secret("limit", body, mount_point=MOUNT)
        except hvac.exceptions.InvalidRequest:
            high = middle - 1
        else:
            low = middle
    return low


def measure(rows: int, changes: int) -> dict:
    """The figures of both layouts for ``rows`` rows and ``changes`` changed rows."""
    figures = {}
    with DevOpenBao() as bao:
        client = bao.client()
        client.sys.enable_secrets_engine("kv", path=MOUNT, options={"version": "2"})
        seed = {f"homelab/lxc/{1000 + n}": row(1000 + n) for n in range(rows)}
        writer = OpenBaoStore(client, MOUNT, "per-row")
        for key, value in seed.items():
            with writer.locked(key):
                writer.save({key: value}, key)
        store = OpenBaoStore(client, MOUNT, "per-row")
        start = time.perf_counter()
        store.load()
        figures["per row: load s"] = round(time.perf_counter() - start, 3)
        figures["per row: load requests"] = store.requests
        ownership, sent = Ownership(store), 0
        start = time.perf_counter()
        for n in range(changes):
            key = f"homelab/lxc/{1000 + n}"
            ownership.mark_owned(key, f"bench-{n}", {**seed[key]["declared"], "memory": 1024})
            sent += len(json.dumps({"key": key, "row": store.load()[key]}))
        figures["per row: s per change"] = round((time.perf_counter() - start) / changes, 4)
        figures["per row: bytes per change"] = sent // changes

        figures["per target: most rows as a mapping"] = structured_limit(client, seed)
        text = {"rows": json.dumps(seed)}
        client.secrets.kv.v2.create_or_update_secret("per-target", text, mount_point=MOUNT)
        whole = PerTarget(client, "per-target")
        start = time.perf_counter()
        whole.load()
        figures["per target: load s"] = round(time.perf_counter() - start, 3)
        figures["per target: load requests"] = whole.requests
        start = time.perf_counter()
        for n in range(changes):
            whole.change(f"homelab/lxc/{1000 + n}", {**seed[f"homelab/lxc/{1000 + n}"], "state_id": "x"})
        figures["per target: s per change"] = round((time.perf_counter() - start) / changes, 4)
        figures["per target: bytes per change"] = whole.sent // changes
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--changes", type=int, default=50)
    args = parser.parse_args()
    for name, value in measure(args.rows, args.changes).items():
        print(f"{name:32} {value}")


if __name__ == "__main__":
    main()
