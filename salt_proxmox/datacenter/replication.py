"""Storage replication jobs (``proxmox_replication``): one ``replication.cfg`` section, cluster-wide, by id.

Source: pve-manager ``PVE/API2/ReplicationConfig.pm`` (``index``, ``read``, ``create``, ``update``,
``delete``) over pve-guest-common ``src/PVE/ReplicationConfig.pm`` (``parse_replication_job_id``, the
``local`` type's ``properties``/``options``, ``write_config``), pve-container ``src/PVE/LXC/Config.pm`` and
qemu-server ``src/PVE/QemuConfig.pm`` ``get_replicatable_volumes``, pve-storage ``Plugin.pm``/
``ZFSPoolPlugin.pm`` ``volume_has_feature`` and pve-common ``SectionConfig.pm``. PVE 8 and 9 alike.

- The id is ``<vmid>-<jobnum>`` (``pve-replication-id``: ``[1-9][0-9]{2,8}-\\d{1,9}``). ``create`` keeps
  the id as sent but ``parse_section_header`` reads it back as integers, so ``100-01`` would come back as
  ``100-1``: a jobnum with a leading zero is refused by name.
- Read ``GET /cluster/replication/{id}`` (VM.Audit on ``/vms/<vmid>``): the options, ``source``, ``guest``,
  ``jobnum`` and the file's ``digest``, which an update sends back (``assert_if_modified``). Absence is
  exactly HTTP 500 ``no such replication job '<id>'``.
- ``delete`` only marks the job (``remove_job`` ``full``: local snapshots and the target's volumes;
  ``local`` with ``keep``); PVE's replication runner removes it on its next run (pve-guest-common
  ``PVE/Replication.pm`` ``run_replication_nolock``, pvescheduler every minute). A job so marked is
  therefore read as absent (it is going), and a create at its id is refused until it is gone
  (``replication job '<id>' already exists``). A declaration never sends ``remove_job``.
- ``target`` is ``fixed`` in the ``local`` type's ``options``: ``updateSchema`` leaves it out, so another
  target is refused at plan naming a new job id as the remedy. The key is ``target_node``: ``target``
  names the ``proxmox:targets`` entry in every state.
- ``schedule`` (default ``*/15``) is compared by meaning, as a backup job's is (``backup.schedule``);
  ``rate`` (MB/s, a number of at least 1), ``disable`` and ``comment`` (at most 4096 characters, no line
  feed: ``check_value`` refuses one) are PVE's default when not declared, written as ``delete=``.
- ``source`` is PVE's: ``create`` sets it to the guest's node. A declared one must be that node.
- Refused at create, from what the read credential sees (``create``'s dies): the guest does not exist
  (``Guest '<vmid>' does not exist.``), the target is not a cluster member (``Target '<node>' does not
  exist.``), or is the guest's node (``Source and target must not be identical``), a volume that cannot
  replicate (``missing replicate feature on volume``; ``replicatable_problems``), another job of the guest
  to that target (``write_config``: ``replication job for guest '<vmid>' to target 'local/<node>' already
  exists``). A write for a guest this minion neither owns nor declares in the run is refused too: the job
  snapshots and copies that guest's disks.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from salt_proxmox.backup import declared
from salt_proxmox.backup import schedule as calendar
from salt_proxmox.errors import DeclarationError, shown
from salt_proxmox.guest.absence import indexed_guest
from salt_proxmox.ownership.rows import OWNED, row_key
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import NODE, Endpoint, Rule
from salt_proxmox.pve.facts import storages
from salt_proxmox.pve.listing import get_rows, node_names
from salt_proxmox.simple.fields import Field
from salt_proxmox.simple.spec import Call, Declared, ObjectSpec, exact_message, identify_by_name
from salt_proxmox.storage.objects import VOLUME_KEY
from salt_proxmox.wire.volumes import volume_owner

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.run.context import PveContext

FAMILY = "replication"
#: ``pve-replication-id``'s pattern, the jobnum without a leading zero (``parse_replication_job_id``
#: reads it back as an integer).
JOB_ID = re.compile(r"^([1-9][0-9]{2,8})-(0|[1-9][0-9]{0,8})\Z", re.ASCII)
#: ``ReplicationConfig.pm`` ``schedule``'s default.
DEFAULT_SCHEDULE = "*/15"
#: The guest types and the ownership rows' families of their guests (``salt_proxmox.registry``).
GUEST_KINDS = {"lxc": "CT", "qemu": "VM"}
REMEDY_GUEST = "declare the guest under proxmox:lxc or proxmox:qemu (adopt: true for one made by hand)"


def _node(text: str) -> str | None:
    return None if NODE.match(text) else "not a PVE node name (pve-node)"


def _rate(text: str) -> str:
    """``rate`` (``type => 'number', minimum => 1``) in one spelling: ``10`` for 10 and 10.0."""
    try:
        number = float(text)
    except ValueError:
        raise ValueError(f"expected a number of MB/s, got {shown(text)}") from None
    if not math.isfinite(number) or number < 1:
        raise ValueError(f"{shown(text)} is below the minimum 1 (MB/s)")
    return str(int(number)) if number.is_integer() else repr(number)


def _schedule(text: str) -> str:
    problem = calendar.problem(text)
    if problem:
        raise ValueError(problem)
    return text


def _comment(text: str) -> str | None:
    if len(text) > 4096:
        return "at most 4096 characters"
    if "\n" in text or "\r" in text:
        return "PVE refuses a line feed (SectionConfig.pm check_value: property contains a line feed)"
    return None


#: The ``local`` type's options a declaration takes (``target`` as ``target_node``).
FIELDS: dict[str, Field] = {
    "target_node": Field(check=_node),
    "schedule": Field(normal=_schedule, check=lambda t: "at most 128 characters" if len(t) > 128 else None),
    "rate": Field(normal=_rate),
    "disable": Field("flag"),
    "comment": Field(check=_comment),
    "source": Field(check=_node),
}
#: The value PVE uses for an option the section does not hold.
DEFAULTS = {"schedule": DEFAULT_SCHEDULE, "rate": "", "disable": 0, "comment": ""}
#: The wire name of a field.
WIRE = {"target_node": "target"}


def _rule(key: str) -> Rule | None:
    if key in ("id", "digest", "delete", "type"):
        return Rule()
    name = "target_node" if key == "target" else key
    found = FIELDS.get(name)
    return found.rule() if found is not None else None


CREATE = Endpoint("POST /cluster/replication", ("id", "type", "target"), _rule)
UPDATE = Endpoint("PUT /cluster/replication/{id}", (), _rule)


def _id_problem(name: str) -> str | None:
    if JOB_ID.match(name):
        return None
    if re.match(r"^[1-9][0-9]{2,8}-0[0-9]+\Z", name):
        return (
            f"{name}: PVE reads a jobnum back as an integer (ReplicationConfig.pm parse_section_header), "
            "so a leading zero would never be found again; write it without one"
        )
    return f"invalid replication job id '{name}' (<vmid>-<jobnum>, the vmid 100 or more: pve-replication-id)"


def vmid_of(decl: Declared) -> int:
    """The guest a job's id names."""
    return int(decl.identity.partition("-")[0])


def identify(
    state_id: str, target: str, name: object = None, vmid: object = None, **extra: object
) -> Declared:
    """A job by its id (``name``, ``<vmid>-<jobnum>``). Raises DeclarationError for an unknown key, a bad
    id, or a ``vmid`` that is not the id's."""
    found = identify_by_name(
        state_id,
        target,
        name,
        extra,
        noun="replication job",
        has="name (<vmid>-<jobnum>), target_node, schedule, rate, disable, comment, source",
        check=_id_problem,
    )
    guest = str(name).partition("-")[0]
    if vmid is not None and str(vmid) != guest:
        raise DeclarationError(f"vmid: the job id {name} names guest {guest}, not {shown(vmid)}")
    return Declared(
        state_id,
        target,
        identity=found.identity,
        label=f"replication job {name}",
        names={"name": str(name), "vmid": guest},
    )


def declare(
    state_id: str, target: str, name: object = None, vmid: object = None, adopt: object = False, **options
) -> Declared:
    """A checked job: ``name`` (``<vmid>-<jobnum>``), ``target_node`` (required), ``schedule``, ``rate``
    (MB/s), ``disable``, ``comment``, ``source`` (checked, never needed), ``adopt``. An option left out
    or cleared is PVE's default (``DEFAULTS``). Raises DeclarationError naming each bad key and its rule
    (``remove_job`` included: PVE's delete sets it)."""
    probe = identify(state_id, target, name=name, vmid=vmid)
    problems, values = [], {}
    for key, value in options.items():
        if key == "remove_job":
            problems.append(
                "remove_job: PVE's delete sets it (ReplicationConfig.pm delete); declare the job ensure: "
                "absent with removal: destroy"
            )
        elif key not in FIELDS:
            problems.append(f"{key}: not a replication job option (unknown key)")
        else:
            try:
                values[key] = FIELDS[key].canonical(value)
            except ValueError as exc:
                problems.append(f"{key}: {exc}")
    if not values.get("target_node"):
        problems.append("target_node: a job requires its target node (ReplicationConfig.pm local: target)")
    if problems:
        raise DeclarationError(problems)
    if values.get("source") == "":
        del values["source"]
    for key, default in DEFAULTS.items():  # left out or cleared: PVE's default
        if values.get(key) in (None, ""):
            values[key] = default
    return probe.declaring(values, adopt)


def parse(data: object, decl: Declared) -> dict | None:
    """``GET /cluster/replication/{id}`` → ``target_node``, ``schedule`` (the declared spelling when it
    means the same), ``rate``, ``disable``, ``comment``, ``source``, ``digest``; None for a job marked
    ``remove_job`` (PVE removes it on its next run). Raises ValueError for another shape."""
    if not isinstance(data, Mapping) or not data.get("target"):
        raise ValueError("expected the replication job's options with its target")
    if data.get("remove_job"):
        return None
    found: dict[str, object] = {}
    for key, field in FIELDS.items():
        raw = data.get(WIRE.get(key, key))
        if raw is None or raw == "":
            found[key] = DEFAULTS.get(key, "")
            continue
        try:
            found[key] = field.canonical(raw)
        except ValueError:
            found[key] = str(raw)  # a value no declaration can spell: it differs
    want = decl.values.get("schedule")
    if isinstance(want, str) and calendar.same(want, str(found["schedule"])):
        found["schedule"] = want
    found["digest"] = str(data.get("digest") or "")
    return found


def _path(decl: Declared) -> str:
    return api_path("cluster", "replication", decl.names["name"])


def create(decl: Declared) -> Call:
    """``POST /cluster/replication``: id, type ``local``, target and every option not at PVE's default."""
    form = {"id": decl.names["name"], "type": "local"}
    for key, value in decl.values.items():
        if value != DEFAULTS.get(key, ""):
            form[WIRE.get(key, key)] = FIELDS[key].wire(value)
    return Call("POST", "cluster/replication", form=form)


def update(decl: Declared, live: Mapping[str, object]) -> Call | None:
    """``PUT /cluster/replication/{id}``: each declared option that differs, ``delete`` for one going back
    to PVE's default; ``target`` when it differs (never sent: ``refusals`` refuses it). None when nothing
    differs."""
    form, gone = {}, []
    for key, value in decl.values.items():
        if live.get(key) == value:
            continue
        if key in DEFAULTS and value == DEFAULTS[key]:
            gone.append(key)
        else:
            form[WIRE.get(key, key)] = FIELDS[key].wire(value)
    if gone:
        form["delete"] = ",".join(sorted(gone))
    return Call("PUT", _path(decl), form=form) if form else None


def replicatable(config: Mapping[str, object], kind: str, vmid: int, types: Mapping) -> tuple[list[str], int]:
    """``(problems, count)`` for a guest ``config`` of ``kind`` (lxc, qemu) and the storages ``types``
    (``facts.storages``), as ``get_replicatable_volumes`` with ``$noerr`` 0 (``create``) judges it:
    ``problems`` each volume PVE refuses to replicate as ``key (volume: why)``, ``count`` the volumes it
    would. A VM's CD-ROM and a ``replicate=0`` volume are skipped, so are volumes on shared storage
    (``$scfg->{shared}``, ``facts.SHARED_TYPES``) and volumes another guest owns; a container's bind or
    device mount point that replicates is refused (``unable to replicate mountpoint type``), so is a VM's
    host path (``unable to replicate local file/device``); any other volume must be on a ``zfspool``
    storage (only ``ZFSPoolPlugin.pm`` ``volume_has_feature`` has ``replicate``: ``missing replicate
    feature on volume``). A count of 0 is ``No replicatable volumes found``."""
    problems, count = [], 0
    for key, raw in sorted(config.items()):
        if not VOLUME_KEY.match(key) or not isinstance(raw, str):
            continue
        volume, _, rest = raw.partition(",")
        volume = volume.split("=", 1)[1] if volume.startswith("volume=") else volume
        options = dict(item.split("=", 1) for item in rest.split(",") if "=" in item)
        replicate = options.get("replicate", "1") not in ("0", "no", "off", "false")
        if not replicate or (kind == "qemu" and (options.get("media") == "cdrom" or volume == "none")):
            continue
        if volume.startswith("/"):
            problems.append(f"{key} ({volume}: a host path, not a volume)")
            continue
        storage = types.get(volume.split(":", 1)[0], {})
        if storage.get("shared") or volume_owner(volume) != vmid:
            continue
        if storage.get("type") != "zfspool":
            problems.append(f"{key} ({volume}: {storage.get('type') or 'unknown'} storage)")
        else:
            count += 1
    return problems, count


def _guest_ours(ctx: PveContext, kind: str, vmid: int) -> bool:
    """Whether this minion owns guest ``vmid`` (an ``owned`` row of its family) or a guest state of this
    run declares it (``backup.declared.guest``: its create or adoption comes first)."""
    if declared.guest(ctx, vmid) is not None:
        return True
    row = ctx.ownership.row(row_key(ctx.target.name, kind, vmid)) or {}
    return row.get("phase") == OWNED


def _jobs(ctx: PveContext) -> list[Mapping]:
    return get_rows(ctx.client, "cluster/replication", ctx.broker.read(), what="replication jobs")


def _create_refusals(ctx: PveContext, decl: Declared, row: Mapping) -> list[str]:
    """``create``'s dies after the guest is found (module docstring), in its order."""
    vmid, node, kind = vmid_of(decl), str(row["node"]), str(row["type"])
    want, found = str(decl.values["target_node"]), []
    pve = "pve-manager API2/ReplicationConfig.pm create"
    if want not in node_names(ctx.client, ctx.broker.read()):
        found.append(
            f"target_node: {want} is not a member of the cluster, and PVE refuses the job (`Target '{want}' "
            f"does not exist.`, {pve}). Name a cluster node."
        )
    source = decl.values.get("source")
    if source is not None and source != node:
        found.append(
            f"source: guest {vmid} is on {node}, and PVE refuses another source (`Source '{source}' does not "
            f"match current node of guest '{vmid}' ({node})`, {pve}). Leave source out: PVE sets it."
        )
    if want == node:
        found.append(
            f"target_node: guest {vmid} runs on {want} itself, and PVE refuses the job (`Source and target "
            f"must not be identical`, {pve}). Name another node."
        )
    config = ctx.client.request("GET", f"{api_path('nodes', node, kind, vmid)}/config", ctx.broker.read())
    problems, count = replicatable(config if isinstance(config, Mapping) else {}, kind, vmid, storages(ctx))
    if problems:
        found.append(
            f"{decl.label}: {', '.join(problems)} cannot replicate: only a zfspool storage can (pve-storage "
            "ZFSPoolPlugin.pm volume_has_feature 'replicate'), and PVE refuses the job (`missing replicate "
            f"feature on volume`, {GUEST_KINDS[kind]} get_replicatable_volumes). Move the volume to a "
            "zfspool storage, or mark it replicate=0."
        )
    elif not count:
        found.append(
            f"{decl.label}: guest {vmid} has no volume PVE would replicate, and PVE refuses the job (`No "
            f"replicatable volumes found`, {pve}). Put a disk on a zfspool storage first."
        )
    for job in _jobs(ctx):
        if (
            str(job.get("id")) != decl.identity
            and str(job.get("guest")) == str(vmid)
            and job.get("target") == want
        ):
            found.append(
                f"{decl.label}: job {job.get('id')} already replicates guest {vmid} to {want}, and PVE keeps "
                f"one job per guest and target (`replication job for guest '{vmid}' to target 'local/{want}' "
                "already exists`, pve-guest-common ReplicationConfig.pm write_config). Declare that job "
                "(adopt: true) instead."
            )
    return found


def refusals(ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None) -> list[str]:
    """PVE's refusals of the write, predicted with the read credential (module docstring): another
    target on an update; on a create, a job at this id still marked for removal, a guest that does not
    exist, then ``_create_refusals``; on any write, a guest neither ours nor declared in the run."""
    if action == "delete":
        return []
    vmid = vmid_of(decl)
    if action == "update":
        if live is not None and live.get("target_node") != decl.values["target_node"]:
            return [
                f"{decl.label} replicates to {live.get('target_node')}, and PVE cannot change a job's target "
                "(ReplicationConfig.pm: target is fixed, so PUT /cluster/replication/{id} takes none). "
                "Declare the job for the new target under another jobnum (and this one absent)."
            ]
        if live is not None and decl.values.get("source") not in (None, live.get("source")):
            return [
                f"source: PVE keeps {live.get('source')} as the job's source (the guest's node, moved by a "
                "migration: ReplicationConfig.pm switch_replication_job_target). Leave source out."
            ]
    row = indexed_guest(ctx, vmid)
    if action == "create":
        marked = next(
            (j for j in _jobs(ctx) if str(j.get("id")) == decl.identity and j.get("remove_job")), None
        )
        if marked is not None:
            return [
                f"{decl.label} is marked for removal (remove_job={marked['remove_job']}), and PVE refuses a "
                f"new job at its id until its replication runner removes it on its next run (`replication "
                f"job '{decl.identity}' already exists`). Run again once it is gone."
            ]
        if row is None:
            if declared.guest(ctx, vmid) is not None:
                return []  # made by this run first: judged again, on its config, when the apply comes
            return [
                f"{decl.label}: the cluster holds no guest {vmid}, and PVE refuses the job (`Guest '{vmid}' "
                f"does not exist.`, pve-manager API2/ReplicationConfig.pm create). {REMEDY_GUEST[0].upper()}"
                f"{REMEDY_GUEST[1:]}, or name one that exists."
            ]
    kind = str((row or {}).get("type") or "")
    found = []
    if kind in GUEST_KINDS and not _guest_ours(ctx, kind, vmid):
        found.append(
            f"{decl.label}: {GUEST_KINDS[kind]} {vmid} is not ours (no owned row, and no state of this run "
            "declares it), and the job snapshots and copies its disks. Nothing of a guest is taken over "
            f"silently: {REMEDY_GUEST}."
        )
    if action == "create" and row is not None:
        found.extend(_create_refusals(ctx, decl, row))
    return found


def side_effects(ctx: PveContext, decl: Declared, action: str) -> list[str]:
    """What PVE does beside the write: the job runs on its schedule (never awaited); a delete only marks it,
    and the replication runner removes the snapshots, the target's volumes and the job on its next run."""
    if action == "delete":
        return [
            f"{decl.label}: PVE marks it for removal (remove_job=full, ReplicationConfig.pm delete); its "
            "replication runner removes the local replication snapshots, the replicated volumes on "
            f"{decl.values.get('target_node') or 'the target'} and then the job on its next run "
            "(pvescheduler, every minute). Until then PVE lists it with remove_job"
        ]
    if decl.values.get("disable"):
        return []
    return [
        f"{decl.label}: PVE runs it on its schedule ({decl.values.get('schedule')}) from the guest's node "
        "(pvescheduler); its next run is shown by GET /nodes/<node>/replication/<id>/status, not awaited here"
    ]


def export_values(live: Mapping[str, object], probe: Declared) -> dict:
    """``proxmox.export``: a live job's target and each option it holds other than PVE's default."""
    return {
        key: value
        for key, value in live.items()
        if key == "target_node" or (key in DEFAULTS and value != DEFAULTS[key])
    }


def _export_names(row: Mapping[str, object]) -> Mapping[str, object] | None:
    """``index`` names each job by ``id``; one marked for removal is going, not exported."""
    name = row.get("id")
    return {"name": name} if isinstance(name, str) and name and not row.get("remove_job") else None


SPEC = ObjectSpec(
    family=FAMILY,
    noun="replication job",
    declare=declare,
    identify=identify,
    read=lambda decl: Call("GET", _path(decl)),
    absence="HTTP 500 \"no such replication job '<id>'\" (pve-manager API2/ReplicationConfig.pm read)",
    is_absent=exact_message(500, "no such replication job '{name}'"),
    parse=parse,
    # ``parse`` is None only for a job marked remove_job: PVE's runner removes it, so it is absent.
    confirm_absent=lambda ctx, credential, decl: None,
    create=create,
    create_endpoint=CREATE,
    update=update,
    update_endpoint=UPDATE,
    delete=lambda decl, live: Call("DELETE", _path(decl)),
    # ``update`` asserts the digest of replication.cfg (SectionConfig assert_if_modified); DELETE takes none.
    write_guard=lambda ctx, credential, decl, live: (
        {"digest": str(live["digest"])} if live.get("digest") else {}
    ),
    refusals=refusals,
    side_effects=side_effects,
    export_names=_export_names,
    export_listings=lambda ctx: [(Call("GET", "cluster/replication"), {})],
    export_values=export_values,
    live_only=("digest", "source"),
)
