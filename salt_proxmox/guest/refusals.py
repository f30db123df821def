"""PVE's refusals of a guest destroy, predicted at plan from what the ``read`` credential can see,
and the one read of a guest's power state; shared by guest families.

The provision token's privileges (``provision_privilege_check``): a write PVE lets only a caller
with a privilege beyond the guest's own (a privileged container on PVE 9, a VM's ``startup``: both
``Sys.Modify`` on ``/``) is judged at plan by reading the provision token's effective privileges
with the read credential, when its id is known without minting.

Destroy (pve-container ``src/PVE/API2/LXC.pm`` ``destroy_vm``, qemu-server ``PVE/API2/Qemu.pm``
``destroy_vm``): a guest with ``protection: 1`` ("can't remove CT N - protection mode enabled",
pve-guest-common ``AbstractConfig::check_protection``) or a running one (no ``force``/``skiplock``
is ever sent). The running state is one ``GET …/status/current`` (VM.Audit), read only when a
destroy is judged or a change's effect depends on it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from salt_proxmox.guest import ha_owned
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.errors import PveError, PveMalformed
from salt_proxmox.pve.permissions import held_privileges
from salt_proxmox.wire.propstring import flag

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.guest.family import Family
    from salt_proxmox.run.context import PveContext


def protected(live: Mapping[str, object]) -> bool:
    """True when a live config has ``protection: 1`` (an unreadable value counts as not set)."""
    try:
        return flag(live.get("protection") or "0") == "1"
    except ValueError:
        return False


def status_path(kind: str, node: str, vmid: int) -> str:
    """``nodes/{node}/{kind}/{vmid}/status`` (``kind``: ``lxc``/``qemu``), labels encoded: the
    power-state calls hang under it."""
    return f"{api_path('nodes', node, kind, vmid)}/status"


def read_current(ctx: PveContext, kind: str, node: str, vmid: int) -> Mapping[str, object]:
    """PVE's answer about guest ``vmid`` of type ``kind``: one ``GET …/status/current`` with the
    ``read`` credential (VM.Audit, pve-container ``src/PVE/API2/LXC/Status.pm`` ``vm_status``,
    qemu-server ``PVE/API2/Qemu.pm`` ``vm_status``), its ``status`` word checked. It carries ``ha``
    too, pve-ha-manager ``PVE::HA::Config::get_service_status``: ``{managed: 0}``, or ``{managed: 1,
    state: <requested state>, ...}`` for a guest HA manages (``ha_managed``). Raises PveMalformed
    for an answer without a status word or whose ``ha`` is not ``{managed: 0|1, ...}`` (read as
    unmanaged, a start HA takes over would be planned), and what the client raises."""
    path = f"{status_path(kind, node, vmid)}/current"
    status = ctx.client.request("GET", path, ctx.broker.read())
    word = status.get("status") if isinstance(status, Mapping) else None
    if not isinstance(word, str) or not word:
        raise PveMalformed("GET", path, "the answer has no status word")
    if "ha" in status:
        ha = status["ha"]
        try:
            managed = flag(ha["managed"]) if isinstance(ha, Mapping) and "managed" in ha else None
        except ValueError:
            managed = None
        if managed is None:
            raise PveMalformed("GET", path, "its ha is not {managed: 0|1, ...}")
    return status


def read_status(ctx: PveContext, kind: str, node: str, vmid: int) -> str:
    """The status word (``running``, ``stopped``) of guest ``vmid`` of type ``kind``
    (``read_current``). Raises what ``read_current`` raises."""
    return str(read_current(ctx, kind, node, vmid)["status"])


def ha_managed(current: Mapping[str, object]) -> str | None:
    """The HA state requested for a guest HA manages (``started``, ``stopped``, ``ignored``, …; ``''``
    when not given), or None when ``current`` (``read_current``) says HA does not manage it."""
    ha = current.get("ha")
    if not isinstance(ha, Mapping):
        return None
    try:
        managed = flag(ha.get("managed") or "0") == "1"
    except ValueError:
        return None
    return str(ha.get("state") or "") if managed else None


#: qemu-server ``QemuServer.pm`` ``vm_is_paused($vmid, 1)`` (as ``vm_shutdown`` and ``vm_reboot``
#: call it): the QMP states (``status/current``'s ``qmpstatus``) in which a running VM is paused.
PAUSED = ("paused", "prelaunch", "suspended")


def paused_state(current: Mapping[str, object]) -> str | None:
    """The ``qmpstatus`` of a VM that is paused (``PAUSED``), or None: running as such, stopped,
    or a container (which has none)."""
    qmp = current.get("qmpstatus")
    return str(qmp) if current.get("status") == "running" and qmp in PAUSED else None


def destroy_refusals(
    ctx: PveContext, family: Family, node: str, vmid: int, live: Mapping[str, object]
) -> list[str]:
    """Why PVE would refuse to destroy guest ``vmid``, in ``destroy_vm``'s order: protection (from
    ``live``), its HA resource (``guest.ha_owned.destroy_refusal``), then a running state (one status
    read). Raises PveError, PveMalformed, PveUnreachable, CredentialError."""
    what, label, command = family.what(vmid, node), family.label, family.command
    if protected(live):
        return [
            f"{what} has protection: 1, and PVE refuses to destroy it (`can't remove {label} "
            f"{vmid} - protection mode enabled`). Clear it first in a run of its own (declare protection: 0 "
            f"in its present state and apply, or `{command} set {vmid} --protection 0`), then destroy it."
        ]
    held = ha_owned.destroy_refusal(ctx, family.ha_type, what, vmid)
    if held:
        return [held]
    status = read_status(ctx, family.kind, node, vmid)
    if status != "stopped":
        refusal = family.destroy_running.format(vmid=vmid)
        return [
            f"{what} is {status}, and PVE refuses to destroy a running {family.noun} "
            f"(`{refusal}`; no force is ever sent). Stop it first "
            f"(`{command} shutdown {vmid}` on the node), then run again."
        ]
    return []


def static_provision_token(ctx: PveContext) -> str | None:
    """The provision token's id when it is known without minting (``source: static``), else None
    (``source: openbao`` mints a token per lease)."""
    provision = (ctx.target.credentials or {}).get("provision")
    token = provision.get("token_id") if isinstance(provision, Mapping) else None
    if not isinstance(token, str) or ctx.target.credentials.get("source") != "static":
        return None
    return token


def provision_privilege_check(
    ctx: PveContext, privilege: str, path: str, why: str, refusal: Callable[[str], str], later: str
) -> tuple[list[str], list[str]]:
    """At plan: ``(refusals, notes)`` for a write that needs ``privilege`` on ``path`` (``why``: what
    needs it, for the notes). When the provision token's id is known without minting (``source:
    static``), its effective privileges are read with the read credential (``GET
    /access/permissions?userid=<token>&path=<path>``, which PVE answers for a caller with Sys.Audit
    on ``/access``: ``pve.permissions.held_privileges``); lacking ``privilege`` is ``refusal(<who>)``.
    When the id is not known (``source: openbao`` mints a token per lease) or the read is refused
    (403), a note says so, ending with ``later`` (who checks it then). Raises PveMalformed,
    PveUnreachable, and PveError other than 403."""
    token = static_provision_token(ctx)
    note = f"the provision token's {privilege} on {path} ({why}) {later}"
    if token is None:
        return [], [f"{note}: its id is known only once it is minted"]
    try:
        held = held_privileges(ctx, ctx.broker.read(), path, userid=token)
    except PveError as error:
        if error.status == 403:
            return [], [
                f"{note}: the read token may not read another token's privileges (Sys.Audit on /access)"
            ]
        raise
    if privilege in held:
        return [], []
    return [refusal(f"the provision token {token}")], []
