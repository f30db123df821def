"""A stub PVE for the guest lifecycle's unit tests (answers by path, every request recorded), the
context it runs in, and the container declaration and answers those tests share."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from urllib.parse import unquote

from salt_proxmox.guest import identity as guest_identity
from salt_proxmox.guest import lifecycle as guest_lifecycle
from salt_proxmox.lxc.family import LXC
from salt_proxmox.lxc.props import parse_declaration
from salt_proxmox.openbao.creds import CredentialBroker
from salt_proxmox.ownership.keeper import Ownership
from salt_proxmox.ownership.rows import OWNED
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.pve.client import Credential, Target, api_path
from salt_proxmox.pve.errors import PVE_WORDS, PveError, classify
from salt_proxmox.pve.facts import PRIVILEGES
from salt_proxmox.run.context import PveContext

READ_SECRET = "read-secret-0f0f0f0f"
PROVISION_SECRET = "provision-secret-a5a5a5a5"
TEMPLATE = "local:vztmpl/debian-13-standard_13.0-1_amd64.tar.zst"
MAC = "BC:24:11:00:00:01"
ROW = "homelab/lxc/150"
CONFIG = "nodes/pve1/lxc/150/config"
#: The one read of a guest: its config rows with the pending section (salt_proxmox.guest.pending).
READ = "nodes/pve1/lxc/150/pending"
INDEX = "cluster/resources"
NEXTID = "cluster/nextid"
CREATE = "nodes/pve1/lxc"


def upid(kind: str) -> str:
    return f"UPID:pve1:00001234:00005678:65F00000:{kind}:150:salt@pve!provision:"


def status_path(kind: str) -> str:
    return f"{api_path('nodes', 'pve1', 'tasks', upid(kind))}/status"


def missing(vmid: int = 150, node: str = "pve1") -> PveError:
    """PVE's exact answer for a missing config, through the client's own classifier."""
    path = f"nodes/{node}/lxc/{vmid}/config"
    return classify(
        "GET", path, 500, f"Configuration file 'nodes/{node}/lxc/{vmid}.conf' does not exist\n", None
    )


OK = {"status": "stopped", "exitstatus": "OK"}
RUNNING = {"status": "running"}
DECLARED = {
    "vmid": 150,
    "node": "pve1",
    "ostemplate": TEMPLATE,
    "hostname": "web",
    "memory": 1024,
    "rootfs": "local-zfs:8",
    "net0": "name=eth0,bridge=vmbr0,ip=dhcp",
    "unprivileged": 1,
}


def live_config(digest: str = "d1", **over: object) -> dict:
    """The live config of a guest matching DECLARED, as GET .../config answers it."""
    config = {
        "digest": digest,
        "arch": "amd64",
        "hostname": "web",
        "memory": 1024,
        "swap": 512,
        "ostype": "debian",
        "rootfs": "local-zfs:subvol-150-disk-0,size=8G",
        "net0": f"name=eth0,bridge=vmbr0,hwaddr={MAC},ip=dhcp,type=veth",
        "unprivileged": 1,
    }
    config.update(over)
    return {key: value for key, value in config.items() if value is not None}


def stored_row(
    phase: str = OWNED,
    instance: str = "11111111-2222-3333-4444-555555555555",
    live: dict | None = None,
    **declared,
) -> dict:
    """A row as this minion writes it; an ``owned`` one carries the fingerprint of ``live`` (default
    ``live_config()``), the guest it was recorded from."""
    decl = parse_declaration(
        "web",
        vmid=150,
        node="pve1",
        target="homelab",
        config={k: v for k, v in {**DECLARED, **declared}.items() if k not in ("vmid", "node")},
    )
    row = {"phase": phase, "instance": instance, "state_id": "web", "declared": decl.stored()}
    if phase == OWNED:
        row["fingerprint"] = guest_identity.live_fingerprint(LXC, live or live_config())
    return row


def _as_rows(answer: object) -> object:
    """A ``GET …/config`` answer as ``GET …/pending`` rows (an exception or a call stays as it is)."""
    if callable(answer) and not isinstance(answer, BaseException):
        return lambda call: _as_rows(answer(call))
    if isinstance(answer, dict):
        return [{"key": key, "value": value} for key, value in answer.items()]
    return answer


@dataclass
class Sent:
    method: str
    path: str
    credential: Credential
    params: dict | None
    form: dict | None


#: What the stub's provision token holds on any path: every privilege of PVE 9 (pve.facts).
HELD = sorted(PRIVILEGES[9])


class StubPve:
    """A duck-typed PveClient: ``routes[(method, path)]`` is a list of answers (the last repeats).

    A ``GET …/pending`` without a route of its own takes the answer of the ``GET …/config`` route
    and gives it as PVE's pending rows with nothing pending (pve-guest-common
    ``config_with_pending_array``: one ``{key, value}`` row per key, the digest one of them). A
    ``GET cluster/ha/resources/<sid>`` without one answers that no HA resource is configured
    (pve-ha-manager ``API2/HA/Resources.pm`` ``read``: HTTP 500 ``no such resource '<sid>'``).
    """

    words = PVE_WORDS

    def __init__(self) -> None:
        # GET /version answers a PVE 9 release unless a test says otherwise (pve.facts); GET
        # cluster/nextid?vmid=N answers N, as PVE does when no guest holds N (Cluster.pm nextid).
        # A NIC's checks (guest.nics) meet a cluster without SDN vnets, a node whose vmbr0 is live
        # (pve-manager Network.pm index, nothing staged) and a provision token holding every privilege
        # of PVE 9 wherever asked (pve-access-control AccessControl.pm permissions: SDN.Use for a NIC,
        # each key's VM.Config.* for access.privileges) unless a test says otherwise.
        self.routes: dict[tuple[str, str], list] = {
            ("GET", "version"): [{"release": "9.0", "version": "9.0.10"}],
            ("GET", NEXTID): [lambda call: call.params["vmid"]],
            ("GET", "cluster/sdn/vnets"): [[]],
            ("GET", "nodes/pve1/network"): [{"data": [{"iface": "vmbr0", "type": "bridge"}]}],
            ("GET", "access/permissions"): [lambda call: {call.params["path"]: dict.fromkeys(HELD, 1)}],
        }
        self.sent: list[Sent] = []

    def on(self, method: str, path: str, *answers: object) -> StubPve:
        self.routes[(method, path)] = list(answers)
        return self

    def request(self, method, path, credential, params=None, form=None, envelope=False):
        call = Sent(method, path, credential, dict(params) if params else None, dict(form) if form else None)
        self.sent.append(call)
        answers = self.routes.get((method, path))
        convert = answers is None and method == "GET" and path.endswith("/pending")
        if convert:
            answers = self.routes.get((method, path.removesuffix("/pending") + "/config"))
        if answers is None and method == "GET" and path.startswith("cluster/ha/resources/"):
            sid = unquote(path.rsplit("/", 1)[1])
            answers = [PveError(method, path, 500, f"no such resource '{sid}'")]
        if not answers:
            raise AssertionError(f"unexpected request {method} {path}")
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        if convert:
            answer = _as_rows(answer)
        if callable(answer):
            answer = answer(call)
        if isinstance(answer, BaseException):
            raise answer
        if path.endswith("/network") and isinstance(answer, dict) and not envelope:
            answer = answer["data"]  # the node listing's route holds PVE's whole answer
        return copy.deepcopy(answer)

    def calls(self, method: str | None = None, path: str | None = None) -> list[Sent]:
        return [
            s
            for s in self.sent
            if (method is None or s.method == method) and (path is None or s.path == path)
        ]

    @property
    def writes(self) -> list[Sent]:
        return [s for s in self.sent if s.method != "GET"]


def context(stub: StubPve, store: MemoryStore | None = None) -> PveContext:
    target = Target(
        "homelab",
        ("https://pve1:8006",),
        credentials={
            "source": "static",
            "read": {"token_id": "salt@pve!read", "secret": READ_SECRET},
            "provision": {"token_id": "salt@pve!provision", "secret": PROVISION_SECRET},
        },
    )
    return PveContext(
        target=target,
        client=stub,
        broker=CredentialBroker(target, {}),
        ownership=Ownership(store if store is not None else MemoryStore()),
        sleep=lambda seconds: None,
    )


def plan(stub: StubPve, store: MemoryStore, test: bool = True, **over: object):
    declared = {**DECLARED, **over}
    declared = {k: v for k, v in declared.items() if v is not None}
    return guest_lifecycle.present(context(stub, store), LXC, "web", test, **declared)


def secret_free(outcome) -> None:
    text = repr(outcome.salt_return("web"))
    assert READ_SECRET not in text and PROVISION_SECRET not in text
