"""Which writes of a guest go through the target's root lane (``pve.lane``), and sending them.

PVE checks who may write each key per write (pve-container ``src/PVE/LXC.pm``
``check_ct_modify_config_perm``: it returns early only for ``$authuser eq 'root@pam'``), so a write
is split by key: the keys only root@pam may set (``Change.root``) go in one config write through
the lane, the rest in the provision token's write as before. Plan and apply split the same way
(``split``), and the plan names the keys of each (``plan_line``).

A create whose declaration holds root keys (``Family.create_root``; PVE's ``create_vm`` checks
the same rules over its form) is two writes: the token's create without them, then one lane write
of them against the digest of the config the create made, read by the read token
(``create_write``). A failure of the lane write leaves the ownership row ``creating``, as a later
create step's failure does; the next run finds the guest tied to our create and matching but for
those keys, records it as ours and writes them through the lane (``guest.decide``).

Without a lane, a root key is refused at plan as before, plus the lane to configure (``route``).
With one, its preconditions are checked once per run at plan and apply (``lane_check``):

- the pvesh lane: ``pvesh`` present and answering (it runs as root@pam or refuses: ``please run as
  root``), and the node it runs on a member of the target's cluster — ``GET /cluster/status``
  through the lane (the row with ``local: 1`` is its node, pve-manager ``PVE/API2/Cluster.pm``
  ``get_status``) against the same read with the read token (the cluster's name and nodes);
- the ticket lane: a ticket obtained for root@pam with its password from OpenBao
  (``pve.ticket.TicketLane.login``: PVE's answer names ``username`` ``root@pam``, asks for no second
  factor). It calls the target's own members, so it is in the cluster by construction; it has no
  node of its own, so what is written as a file on a node (``Family.file_keys``: a container's raw
  ``lxc.*`` lines; snippets) is refused naming the pvesh lane (``node_refusal``).

A lane write is digest-guarded like any other, a task it starts is awaited by its owner (root@pam,
through the lane: ``pve.tasks.await_task``), and it is read back by the read token.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from salt_proxmox.errors import SaltProxmoxError
from salt_proxmox.guest.change import Change
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import check_form
from salt_proxmox.pve.errors import PveError
from salt_proxmox.pve.lane import NOT_ROOT, PveshLane
from salt_proxmox.pve.tasks import await_task, upid_node
from salt_proxmox.pve.ticket import TicketLane
from salt_proxmox.run.context import PveContext

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.guest.family import Declaration, Family

_CHECKED = "salt_proxmox.root_lane/{target}"
#: A lane's label before its node's name (``pvesh on pve1``).
LABEL = "pvesh on "


def _rows(answer: object) -> list[Mapping[str, object]]:
    return [row for row in answer or [] if isinstance(row, Mapping)] if isinstance(answer, list) else []


def lane_check(ctx: PveContext) -> tuple[str, list[str]]:
    """``(label, refusals)`` of the target's root lane, checked once per run (``ctx.memo``):
    ``pvesh on <node>`` or ``ticket for root@pam`` when its preconditions hold (module docstring),
    else each one that does not, as a sentence saying why. Raises what the read token's ``GET
    /cluster/status`` raises (the pvesh lane's membership check)."""
    key = _CHECKED.format(target=ctx.target.name)
    if key in ctx.memo:
        return ctx.memo[key]
    lane = ctx.lane
    where = f"proxmox:targets:{ctx.target.name}:root_lane"
    found: tuple[str, list[str]]
    if isinstance(lane, TicketLane):
        try:
            lane.login()  # its username is root@pam, or it raises TicketRefused
        except SaltProxmoxError as exc:
            found = (lane.label, [f"{where}: {exc} Nothing goes through the lane."])
        else:
            found = (lane.label, [])
        ctx.memo[key] = found
        return found
    assert isinstance(lane, PveshLane)
    if lane.executable() is None:
        path = lane.config.pvesh
        # A file there that may not be executed is not a missing pvesh: say which it is.
        missing = (
            f"{path} is not executable" if path and os.path.isfile(path)
            else f"pvesh is not {'at ' + path if path else 'on the PATH'} of this minion"
        )  # fmt: skip
        found = ("pvesh", [
            f"{where}: {missing}. The pvesh lane writes as root on a PVE node: run the states on a node of "
            "the cluster (a minion there, or salt-ssh to it), or configure the path of pvesh."
        ])  # fmt: skip
    else:
        try:
            laned = _rows(lane.request("GET", "cluster/status"))
        except PveError as exc:
            why = (
                "pvesh runs only as root (pve-common RESTEnvironment setup_default_cli_env: `please run "
                "as root`): run the minion as root"
                if NOT_ROOT in exc.message
                else f"pvesh get /cluster/status failed ({exc.message})"
            )
            found = ("pvesh", [f"{where}: {why}; nothing goes through the lane."])
        else:
            found = _membership(ctx, where, laned)
    if not found[1]:
        # The Lane's label is known once checked (pve.lane.Lane): plans name it (``pvesh on pve1``).
        lane.label = found[0]
    ctx.memo[key] = found
    return found


def lane_node(ctx: PveContext) -> str | None:
    """The node the target's root lane runs on, once ``lane_check`` found its preconditions hold
    (its label is ``pvesh on <node>``), else None: None for the ticket lane, which has no node of its
    own. Reads nothing."""
    found = ctx.memo.get(_CHECKED.format(target=ctx.target.name))
    if not found or found[1]:
        return None
    label = str(found[0])
    return label.removeprefix(LABEL) if label.startswith(LABEL) else None


def node_refusal(ctx: PveContext, what: str, files: str) -> str | None:
    """None when the target's lane runs on a node (pvesh), else the sentence refusing ``what``
    (``lxc``, a snippet) through the ticket lane: ``files`` are written on the node, by a local file
    write, and the ticket lane only speaks the API, which has no call that writes them."""
    if not isinstance(ctx.lane, TicketLane):
        return None
    return (
        f"{what}: needs the pvesh lane ({files} are written on the node); the ticket lane ({ctx.lane.label}) "
        "only calls the API, which has no call that writes them. Configure "
        f"proxmox:targets:{ctx.target.name}:root_lane: pvesh and run the states on a node of the cluster "
        "(a minion there, or salt-ssh to it)."
    )


def _membership(ctx: PveContext, where: str, laned: list[Mapping[str, object]]) -> tuple[str, list[str]]:
    """The lane's node checked against the cluster the read token sees (``lane_check``)."""
    seen = _rows(ctx.client.request("GET", "cluster/status", ctx.broker.read()))
    local = next(
        (str(row.get("name")) for row in laned if row.get("type") == "node" and row.get("local")), None
    )
    label = f"{LABEL}{local}" if local else "pvesh"
    ctx.memo[_CHECKED.format(target=ctx.target.name) + "/node"] = local
    nodes = {str(row.get("name")) for row in seen if row.get("type") == "node"}
    names = [{str(row.get("name")) for row in rows if row.get("type") == "cluster"} for rows in (laned, seen)]
    if local is None:
        return label, [f"{where}: pvesh's /cluster/status names no local node, so its node is unknown."]
    if local not in nodes or names[0] != names[1]:
        cluster = ", ".join(sorted(names[1])) or "a single node"
        return label, [
            f"{where}: pvesh runs on node {local}"
            + (f" of cluster {', '.join(sorted(names[0]))}" if names[0] else "")
            + f", which is not a member of target {ctx.target.name} ({cluster}: {', '.join(sorted(nodes))}). "
            "Run the states on a node of this target's cluster."
        ]
    return label, []


def route(
    ctx: PveContext, change: Change, node: str | None = None, on_node: Collection[str] = ()
) -> tuple[str | None, list[str]]:
    """Where ``change``'s root keys go: ``(label, [])`` through the lane (``pvesh on pve1``,
    ``ticket for root@pam``), ``(None, refusals)`` when there is no lane (the family's sentences,
    then the lane to configure) or its preconditions fail (``lane_check``), ``(None, [])`` with no
    root keys. The keys of ``on_node`` are written in the guest's files on its own node
    (``Family.file_keys``), so the lane must be pvesh (``node_refusal``) running on ``node``, else
    they are refused naming where to run."""
    if not change.root:
        return None, []
    filed = [key for key in change.root if key in on_node]
    if ctx.lane is None:
        # Keys written as files on the node have the pvesh lane only (node_refusal).
        ticket = (
            ""
            if len(filed) == len(change.root)
            else (
                ", or root_lane: {via: ticket, password: {path: <OpenBao path>}} (root@pam's password from "
                "OpenBao)"
            )
        )
        return None, [
            *change.root.values(),
            f"Or let this product write {', '.join(change.root)} as root: configure "
            f"proxmox:targets:{ctx.target.name}:root_lane: pvesh and run the states on a node of the cluster "
            f"(a minion there, or salt-ssh to it){ticket}.",
        ]
    label, refusals = lane_check(ctx)
    if filed:
        refused = node_refusal(ctx, ", ".join(filed), "files under /etc/pve")
        if refused:
            return None, [*refusals, refused]
    local = ctx.memo.get(_CHECKED.format(target=ctx.target.name) + "/node")
    if not refusals and filed and node is not None and local != node:
        refusals = [
            f"{', '.join(filed)}: written in the guest's config file on its own node {node}, under that "
            "node's config lock (pve-guest-common AbstractConfig.pm lock_config), and the root lane runs "
            f"on {local}. Run these states on node {node} (a minion there, or salt-ssh to it)."
        ]
    return (None, refusals) if refusals else (label, [])


def split(change: Change) -> tuple[Change, dict[str, str], list[str]]:
    """``change`` without its root keys (the provision token's write), and the root keys' puts
    and clears (the lane's write)."""
    token = replace(
        change,
        put={k: v for k, v in change.put.items() if k not in change.root},
        clear=[k for k in change.clear if k not in change.root],
        root={},
    )
    return (
        token,
        {k: v for k, v in change.put.items() if k in change.root},
        [k for k in change.clear if k in change.root],
    )


def plan_line(what: str, change: Change, via: str) -> str:
    """The plan's sentence naming which keys go which way."""
    token, put, clear = split(change)
    line = f"{what}: would write {', '.join([*put, *clear])} via root lane ({via})"
    rest = [*token.put, *token.clear]
    return line + (f"; {', '.join(rest)} with the provision token" if rest else "")


def send_root(
    ctx: PveContext, endpoint, path: str, node: str, put: Mapping[str, str], clear: list[str], digest: str
) -> None:
    """One digest-guarded config write of root keys through the lane (``PUT <path>``; PVE refuses a
    stale ``digest``: pve-common ``PVE/Tools.pm`` ``assert_if_modified``); a UPID it answers is
    awaited by its owner, root@pam, through the lane. Raises DeclarationError (``check_form`` on
    ``endpoint``, nothing run) and what the lane raises."""
    form = dict(put)
    if clear:
        form["delete"] = ",".join(clear)
    form["digest"] = digest
    check_form(endpoint, form, presence=False)
    lane = ctx.lane
    assert lane is not None
    answer = lane.request("PUT", path, form=form)
    if isinstance(answer, str) and answer.startswith("UPID:"):
        what = f"write {', '.join([*put, *clear])} via root lane"
        kwargs = {"sleep": ctx.sleep} if ctx.sleep is not None else {}
        await_task(
            lane, None, upid_node(answer) or node, answer, what, ctx.task_polls, ctx.poll_interval, **kwargs
        )


def send_root_keys(
    ctx: PveContext,
    family: Family,
    decl: Declaration,
    path: str,
    put: Mapping[str, str],
    clear: list[str],
    digest: str,
) -> None:
    """The root keys of one write: the API's in one lane ``PUT`` (``send_root``), then the keys
    PVE keeps only in the node's config file (``Family.file_keys``, ``''`` for a clear) through
    ``Family.file_write``, guarded by the digest the config then has (re-read by the read token
    after an API write, else ``digest``). Raises what those raise."""
    api_put = {k: v for k, v in put.items() if k not in family.file_keys}
    api_clear = [k for k in clear if k not in family.file_keys]
    filed = {**{k: v for k, v in put.items() if k in family.file_keys}}
    filed.update({k: "" for k in clear if k in family.file_keys})
    if api_put or api_clear:
        send_root(ctx, family.update, path, decl.node, api_put, api_clear, digest)
        if filed:
            done = ctx.client.request("GET", path, ctx.broker.read(), params={"current": "1"})
            digest = str((done or {}).get("digest", "")) if isinstance(done, Mapping) else ""
    if filed:
        assert family.file_write is not None
        family.file_write(ctx, decl, filed, digest)


def create_change(family: Family, decl: Declaration) -> Change:
    """The root keys of a create of ``decl`` (``Family.create_root``: key -> the family's refusal
    without a lane) as the ``Change`` ``route`` routes and ``create_write`` sends: their declared
    values put."""
    root = dict(family.create_root(decl))
    return Change(put={key: decl.config[key] for key in root}, root=root, drift=sorted(root))


def create_line(change: Change, via: str) -> str:
    """How a create's plan line ends when the lane writes ``change``'s root keys after it."""
    return f" with the provision token; then write {', '.join(change.root)} via root lane ({via})"


def create_write(ctx: PveContext, family: Family, decl: Declaration) -> list[str]:
    """After the token's create steps: the root keys of the create (``create_change``) in one lane
    write (``send_root``) guarded by the digest of the config the create made, read by the read
    token (``GET …/config?current=1``). Returns the keys written (none: nothing sent). Raises what
    the read and ``send_root`` raise; the caller's ownership row stays ``creating``."""
    change = create_change(family, decl)
    if not change.root:
        return []
    path = f"{api_path('nodes', decl.node, family.kind, decl.vmid)}/config"
    made = ctx.client.request("GET", path, ctx.broker.read(), params={"current": "1"})
    digest = str((made or {}).get("digest", "")) if isinstance(made, Mapping) else ""
    send_root_keys(ctx, family, decl, path, change.put, [], digest)
    return list(change.put)
