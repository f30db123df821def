"""Snapshots of a container or VM (``proxmox_snapshot``): a named snapshot exists. A state never rolls a
guest back; the ad-hoc ``proxmox.snapshot_rollback`` does, and says first what it discards.

Source: pve-container ``src/PVE/API2/LXC/Snapshot.pm`` and qemu-server ``PVE/API2/Qemu.pm``
(``snapshot_list``, ``snapshot``, ``update_snapshot_config``, ``delsnapshot``, ``rollback``) over
pve-guest-common ``src/PVE/AbstractConfig.pm`` (``__snapshot_prepare``, ``snapshot_create``,
``snapshot_delete``, ``snapshot_rollback``, ``check_lock``).

- Read ``GET /nodes/{node}/{lxc|qemu}/{vmid}/snapshot`` (VM.Audit): every snapshot of the guest
  and the ``current`` row; a snapshot it does not list does not exist, and neither does one of a
  guest whose config is missing.
- Create ``POST …/snapshot`` ``{snapname, description, vmstate}`` (a task: ``vzsnapshot`` /
  ``qmsnapshot``); ``description`` changes by ``PUT …/snapshot/{snapname}/config`` (no task; as
  JSON, so an empty one clears it);
  ``vmstate`` is the snapshot's own (take another one to change it); the description is compared but
  never kept in the ownership row (notes a human wrote, as a guest's); delete ``DELETE
  …/snapshot/{snapname}`` (a task). Privileges: VM.Snapshot on ``/vms/{vmid}``.
- Refused at plan, as ``__snapshot_prepare`` would refuse the task: a guest that is neither there
  nor declared by this run; a template ("you can't take a snapshot if it's a template"); a config
  ``lock`` (``check_lock``: "CT is locked (backup)" / "VM is locked (...)"); a volume on a storage or
  in a format that cannot snapshot (``has_feature('snapshot')``: pve-container ``LXC/Config.pm`` and
  qemu-server ``QemuConfig.pm`` ask pve-storage ``volume_has_feature`` for every volume: ``SNAPSHOT``
  below, by the cluster's release: PVE 9 snapshots a qcow2 volume on LVM; "snapshot feature is not
  available"); and ``vmstate`` of a VM that is not running, which
  PVE would silently leave out (``__snapshot_prepare`` saves the state only ``if
  __snapshot_check_running``). A container has no ``vmstate``. A delete is refused under a lock.
- ``type`` (lxc or qemu) may be left out: a vmid is unique in the cluster (pve-cluster
  ``src/PVE/Cluster.pm`` ``check_vmid_unused``: ``get_vmlist()->{ids}->{$vmid}`` is the one entry of a
  vmid, with its ``type`` and ``node``, "CT/VM N already exists on node"; pve-manager
  ``PVE/API2/Cluster.pm`` ``nextid`` asks the same vmlist), so the guest's family is read (``resolve``)
  from the guest index row (``GET cluster/resources?type=vm``, the run's hint; a vmid neither it nor
  the run lists is looked up in a fresh read before it is refused) or, for a guest this run creates,
  from the state declaring it. A ``type`` given is checked against them. A failing index read is the state's
  error, never a guest's absence.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from salt_proxmox.backup import declared
from salt_proxmox.errors import DeclarationError, boolean_problem, shown
from salt_proxmox.guest.absence import hinted_guest, indexed_guest
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import NODE, Endpoint, Rule, vmid_number
from salt_proxmox.pve.errors import PveConfigMissing, PveError
from salt_proxmox.pve.facts import release, storages
from salt_proxmox.simple.fields import Field
from salt_proxmox.simple.spec import Call, Declared, ObjectSpec

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.pve.client import Credential
    from salt_proxmox.run.context import PveContext

FAMILY = "snapshot"
KINDS = {"lxc": "CT", "qemu": "VM"}
NOUNS = {"lxc": "container", "qemu": "VM"}

#: pve-common ``JSONSchema.pm`` ``pve-snapshot-name`` (``verify_snapshot_name``, maxLength 40);
#: ``current`` (and ``vzdump``, vzdump's own, and ``pending`` for a VM) are reserved.
SNAPNAME = re.compile(r"^[a-z][a-z0-9_-]+\Z", re.IGNORECASE | re.ASCII)
SNAPNAME_MAX = 40
RESERVED = ("current", "vzdump", "pending")

#: pve-storage ``volume_has_feature(..., 'snapshot', ...)`` by storage type: the volume formats that
#: snapshot. ``Plugin.pm`` (dir, nfs, cifs, glusterfs, cephfs: ``qcow2`` only); ``LvmThinPlugin.pm``,
#: ``RBDPlugin.pm``, ``ZFSPlugin.pm`` (raw); ``ZFSPoolPlugin.pm`` and ``BTRFSPlugin.pm`` (raw and
#: subvol); ``LVMPlugin.pm``, ``ISCSIPlugin.pm``, ``ISCSIDirectPlugin.pm``: none on PVE 8 (``RELEASE``
#: holds what PVE 9 adds).
SNAPSHOT = {
    "dir": ("qcow2",),
    "nfs": ("qcow2",),
    "cifs": ("qcow2",),
    "glusterfs": ("qcow2",),
    "cephfs": ("qcow2",),
    "lvmthin": ("raw",),
    "rbd": ("raw",),
    "zfs": ("raw",),
    "zfspool": ("raw", "subvol"),
    "btrfs": ("raw", "subvol"),
    "lvm": (),
    "iscsi": (),
    "iscsidirect": (),
}
#: What a release adds to ``SNAPSHOT``, by major (``GET /version``, ``facts.release``): pve-storage 9.0
#: ``LVMPlugin.pm`` ``volume_has_feature`` snapshots an LVM volume in qcow2 (``snapshot => {current =>
#: {qcow2 => 1}}``, the volume chain of ``snapshot-as-volume-chain``; ``parse_volname`` reads the
#: format from a ``.qcow2`` name, which only such a storage allocates: ``alloc_image``
#: "snapshot-as-volume-chain option need to be enabled to use qcow2 format"); a raw LVM volume still
#: has no snapshot. PVE 8's ``LVMPlugin.pm`` has no snapshot feature at all.
RELEASE = {9: {"lvm": ("qcow2",)}}
#: A guest's config keys holding a volume (qemu-server ``Drive.pm``; pve-container ``Config.pm``).
VOLUME_KEY = re.compile(r"^(?:ide|sata|scsi|virtio|mp)\d+$|^(?:rootfs|efidisk0|tpmstate0)$")

FIELDS = {"description": Field("text"), "vmstate": Field("flag")}
_RULES = {"snapname": Rule(), "description": Rule(max_length=8192), "vmstate": Rule("boolean")}
CREATE = Endpoint("POST /nodes/{node}/{type}/{vmid}/snapshot", ("snapname",), _RULES.get)
UPDATE = Endpoint("PUT /nodes/{node}/{type}/{vmid}/snapshot/{snapname}/config", (), _RULES.get)


def _guest(kind: str | None, vmid: int) -> str:
    return f"{KINDS.get(kind or '', 'VM/CT')} {vmid}"


def _type_problem(type: object) -> str | None:
    """The refusal of a ``type`` that is neither lxc nor qemu (None: left out, resolved later)."""
    if type is None or (isinstance(type, str) and type in KINDS):
        return None
    return (
        f"type: {shown(type)} is neither lxc nor qemu (the guest's family: lxc for a container, qemu for a "
        "VM; leave it out to read it from the guest index)"
    )


def identify(
    state_id: str,
    target: str,
    name: object = None,
    vmid: object = None,
    node: object = None,
    type: object = None,
) -> Declared:
    """A snapshot by its guest (``vmid``, ``node``, and ``type`` lxc or qemu, which may be left out: the
    identity is the vmid and the snapname, a vmid being unique in the cluster) and its name (``name``,
    the snapname). Raises DeclarationError naming each bad key."""
    problems = [problem] if (problem := _type_problem(type)) else []
    try:
        number = vmid_number(vmid)
    except DeclarationError as exc:
        problems += exc.problems
        number = 0
    if not isinstance(node, str) or not NODE.match(node):
        problems.append(f"node: {shown(node)} is not a PVE node name (pve-node)")
    if not isinstance(name, str) or len(name) > SNAPNAME_MAX or not SNAPNAME.match(name):
        problems.append(
            f"name: {shown(name)} is not a snapshot name (pve-snapshot-name: a letter, then letters, digits, "
            f"- or _; at most {SNAPNAME_MAX} characters)"
        )
    elif name.lower() in RESERVED:
        problems.append(
            f"name: {name} is reserved (PVE: unable to use snapshot name '{name}' (reserved name))"
        )
    if problems:
        raise DeclarationError(problems)
    names = {"name": str(name), "vmid": str(number), "node": str(node)}
    return Declared(
        state_id,
        target,
        identity=f"{number}/{name}",
        label=f"snapshot {name} of {_guest(type if isinstance(type, str) else None, number)}",
        names={**names, "type": str(type)} if type is not None else names,
    )


def resolve_type(
    vmid: int, given: object, row: Mapping[str, object] | None, declaring: declared.Guest | None
) -> tuple[str, str | None]:
    """The guest family of a snapshot of ``vmid`` and the plan's note saying where it came from (None
    when it was given): ``row`` is the vmid's guest index row (None: the index lists none),
    ``declaring`` the guest this run declares with it (``declared.guest``; None: none). The index row
    decides, then the run's declaration; ``given`` (the declared ``type``, None when left out) must
    agree with what decides. A given type of a guest in neither is kept: the refusals then say the
    guest does not exist. Raises DeclarationError naming ``type``."""
    problem = _type_problem(given)
    if problem:
        raise DeclarationError(problem)
    if row is not None:
        kind, where = str(row.get("type")), f"{_guest(str(row.get('type')), vmid)} on {row.get('node')}"
        source = "cluster/resources"
    elif declaring is not None:
        kind, where = declaring.kind, _guest(declaring.kind, vmid)
        source = f"state {declaring.state_id} of this run declares it"
    elif given is None:
        raise DeclarationError(
            f"type: left out, and VM/CT {vmid} exists in no guest index row nor in this run's declarations "
            "(GET cluster/resources?type=vm lists the guests the read token may audit, VM.Audit on "
            f"/vms/{vmid}): declare type (lxc or qemu), or create the guest (a proxmox_lxc or proxmox_qemu "
            "state of this run)."
        )
    else:
        return str(given), None
    if given is None:
        if row is not None:
            return kind, f"type: {kind}, read from the guest index ({source}: {where})"
        return kind, f"type: {kind}, as {source} ({where}, not in the guest index yet)"
    if given != kind:
        raise DeclarationError(
            f"type: {given}, but vmid {vmid} is a {NOUNS[kind]} ({source}): {where}, and a vmid is one "
            f"guest in the cluster. Declare type: {kind}, or leave type out."
        )
    return kind, None


def resolve(ctx: PveContext, arguments: Mapping[str, object]) -> tuple[dict, list[str]]:
    """The state's ``arguments`` with ``type`` resolved (``resolve_type``) and the plan's notes: the
    guest index row of the vmid from the run's index (``guest.absence.hinted_guest``, read once per
    run); a vmid neither it nor this run's declarations hold is looked up in a fresh read
    (``indexed_guest``) before it is refused, so a stale hint refuses nothing. A vmid that is not one
    is left to ``declare`` to name. Raises DeclarationError naming ``type``, and what the index read
    raises (PveError, PveMalformed, PveUnreachable, CredentialError): a failing read is never absence."""
    given = arguments.get("type")
    problem = _type_problem(given)
    if problem:
        raise DeclarationError(problem)
    try:
        vmid = vmid_number(arguments.get("vmid"))
    except DeclarationError:
        return dict(arguments), []
    credential = ctx.broker.read()
    row = hinted_guest(ctx, vmid, credential)
    declaring = declared.guest(ctx, vmid)
    if row is None and declaring is None:
        row = indexed_guest(ctx, vmid, credential)
    kind, note = resolve_type(vmid, given, row, declaring)
    return {**arguments, "type": kind}, [note] if note else []


def declare(
    state_id: str,
    target: str,
    name: object = None,
    vmid: object = None,
    node: object = None,
    type: object = None,
    adopt: object = False,
    **options: object,
) -> Declared:
    """A checked snapshot declaration: its identity (``identify``), ``description`` (text) and, for a
    VM, ``vmstate`` (a boolean: the VM's RAM saved with it). Raises DeclarationError naming each bad
    key."""
    decl = identify(state_id, target, name, vmid, node, type)
    problems = [problem] if (problem := boolean_problem("adopt", adopt)) else []
    if type is None:
        problems.append(
            "type: required here (lxc or qemu, the guest's family; a state reads it from the guest index "
            "when left out)"
        )
    values = {}
    for key, value in options.items():
        field = FIELDS.get(key)
        if field is None:
            problems.append(f"{key}: not a key of a snapshot (description, vmstate)")
            continue
        if key == "vmstate" and decl.names.get("type") == "lxc":
            problems.append("vmstate: a container snapshot has no RAM state (pve-container Snapshot.pm)")
            continue
        try:
            values[key] = field.canonical(value)
        except ValueError as exc:
            problems.append(f"{key}: {exc}")
    if problems:
        raise DeclarationError(problems)
    return replace(decl.declaring(values, adopt), unstored=frozenset({"description"}))


def _base(decl: Declared) -> str:
    names = decl.names
    return f"{api_path('nodes', names['node'], names['type'], int(names['vmid']))}/snapshot"


def parse(data: object, decl: Declared) -> dict | None:
    """The snapshot's row of the guest's snapshot list as ``{description, vmstate}``, or None when the
    list does not hold it. Raises ValueError for another shape."""
    if not isinstance(data, list) or not all(isinstance(row, Mapping) for row in data):
        raise ValueError("expected the snapshot list (a list of objects)")
    row = next((row for row in data if row.get("name") == decl.names["name"]), None)
    if row is None:
        return None
    return {**row_values(row), "snapstate": str(row.get("snapstate") or "")}


def row_values(row: Mapping[str, object]) -> dict:
    """One row of ``GET …/snapshot`` as a declaration spells it: ``{description, vmstate}`` (PVE keeps
    a description's trailing newline; ``vmstate`` 1 when the snapshot saved the VM's RAM)."""
    return {
        "description": str(row.get("description") or "").rstrip("\n"),
        "vmstate": 1 if row.get("vmstate") not in (None, 0, "0", "") else 0,
    }


def is_absent(error: PveError, decl: Declared) -> bool:
    """A guest whose config is missing has no snapshot (its refusals then say whether it will exist)."""
    return isinstance(error, PveConfigMissing)


def create(decl: Declared) -> Call:
    """``POST …/snapshot``: the snapname, a description, ``vmstate`` when set."""
    form = {"snapname": decl.names["name"]}
    if decl.values.get("description"):
        form["description"] = str(decl.values["description"])
    if decl.values.get("vmstate"):
        form["vmstate"] = "1"
    return Call("POST", _base(decl), form=form)


def update(decl: Declared, live: Mapping[str, object]) -> Call | None:
    """``PUT …/snapshot/{snapname}/config`` of a changed description; None when ``vmstate`` differs
    (the snapshot's own) or nothing does."""
    if "vmstate" in decl.values and live.get("vmstate") != decl.values["vmstate"]:
        return None
    want = decl.values.get("description")
    if want is None or live.get("description") == want:
        return None
    # As JSON: a form's ``description=`` would be no parameter at all, and ``update_snapshot_config``
    # returns at once when ``description`` is not defined; '' clears it.
    path = f"{_base(decl)}/{decl.names['name']}/config"
    return Call("PUT", path, form={"description": str(want)}, json=True)


def _format(volume: str, kind: str) -> str:
    """A volume's format as pve-storage ``parse_volname`` gives it: a file's extension, ``subvol``
    for a container's subvolume, else raw."""
    volname = volume.split(":", 1)[1] if ":" in volume else volume
    base = volname.rsplit("/", 1)[-1]
    if base.startswith(("subvol-", "basevol-")):
        return "subvol"
    ext = base.rsplit(".", 1)[-1] if "." in base else ""
    return ext if ext in ("qcow2", "raw", "vmdk") else "raw"


def snapshot_formats(storage_type: str, major: int) -> tuple[str, ...]:
    """The volume formats a storage of ``storage_type`` snapshots on PVE ``major`` (``SNAPSHOT``,
    ``RELEASE``); a type not known here is judged as a file storage (``qcow2``)."""
    return {**SNAPSHOT, **RELEASE.get(major, {})}.get(storage_type, ("qcow2",))


def volume_problems(
    config: Mapping[str, object], kind: str, types: Mapping[str, Mapping], major: int
) -> list[str]:
    """Each volume of a guest ``config`` that cannot snapshot on PVE ``major``
    (``snapshot_formats``), as ``key (volume on storage: type)``: a VM's CD-ROM, a cloud-init drive
    and ``none`` are skipped (qemu-server ``QemuConfig.pm`` ``has_feature`` skips CD-ROMs), so is a
    container bind or device mount point (not a volume)."""
    found = []
    for key, raw in sorted(config.items()):
        if not VOLUME_KEY.match(key) or not isinstance(raw, str):
            continue
        volume = raw.split(",", 1)[0]
        volume = volume.split("=", 1)[1] if "=" in volume else volume
        if ":" not in volume or "media=cdrom" in raw or volume.endswith(":cloudinit") or volume == "none":
            continue
        storage = volume.split(":", 1)[0]
        kind_of = str(types.get(storage, {}).get("type") or "")
        if kind_of and _format(volume, kind) not in snapshot_formats(kind_of, major):
            found.append(f"{key} ({volume}: {kind_of} storage, {_format(volume, kind)})")
    return found


def refusals(ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None) -> list[str]:
    """PVE's refusals of the task, predicted with the read credential (module docstring)."""
    names = decl.names
    kind, vmid = names["type"], int(names["vmid"])
    what = _guest(kind, vmid)
    if action == "update":
        if "vmstate" in decl.values and (live or {}).get("vmstate") != decl.values["vmstate"]:
            return [
                f"{decl.label}: vmstate is the snapshot's own and never changes. Take another snapshot (a "
                "new name), or declare it as it is."
            ]
        return []
    credential = ctx.broker.read()
    path = api_path("nodes", names["node"], kind, vmid)
    try:
        config = ctx.client.request("GET", f"{path}/config", credential)
    except PveConfigMissing:
        if action == "create" and any(g.vmid == vmid and g.kind == kind for g in declared.guests(ctx)):
            return []  # made by this run first: judged again, on its config, when the apply comes
        return [
            f"{decl.label}: {what} does not exist on {names['node']}, and no state of this run declares it."
        ]
    config = config if isinstance(config, Mapping) else {}
    found = []
    if config.get("lock"):
        found.append(
            f"{decl.label}: {what} is locked ({config['lock']}), and PVE refuses (pve-guest-common "
            f"AbstractConfig.pm check_lock: '{what.split()[0]} is locked ({config['lock']})'). Wait until "
            "what holds the lock ends, then run again."
        )
    if action == "delete":
        return found
    if str(config.get("template") or "0") not in ("0", ""):
        found.append(
            f"{decl.label}: {what} is a template, and PVE refuses (you can't take a snapshot if it's a "
            "template)."
        )
    major = release(ctx).major
    bad = volume_problems(config, kind, storages(ctx), major)
    if bad:
        chain = (
            ", qcow2 on an LVM storage with snapshot-as-volume-chain"
            if "qcow2" in snapshot_formats("lvm", major)
            else ""
        )
        found.append(
            f"{decl.label}: {', '.join(bad)} cannot be snapshotted (pve-storage volume_has_feature "
            "'snapshot'), and PVE refuses the whole snapshot (snapshot feature is not available). Move the "
            "volume to a storage that snapshots (lvmthin, zfspool, rbd, btrfs, qcow2 on a file "
            f"storage{chain})."
        )
    if decl.values.get("vmstate") == 1:
        status = ctx.client.request("GET", f"{path}/status/current", credential)
        if not isinstance(status, Mapping) or status.get("status") != "running":
            found.append(
                f"{decl.label}: vmstate asks for the RAM of a running VM, and {what} is not running: PVE "
                "would take the snapshot without it (AbstractConfig.pm __snapshot_prepare saves it only "
                "while running). Start the VM first, or declare vmstate: false."
            )
    return found


def _confirm_absent(ctx: PveContext, credential: Credential, decl: Declared) -> None:
    """The snapshot list holds every snapshot of the guest (VM.Audit): not listed is absent."""


SPEC = ObjectSpec(
    family=FAMILY,
    noun="snapshot",
    declare=declare,
    identify=identify,
    read=lambda decl: Call("GET", _base(decl)),
    absence="not in GET /nodes/{node}/{type}/{vmid}/snapshot (every snapshot of the guest), or no guest",
    is_absent=is_absent,
    parse=parse,
    create=create,
    create_endpoint=CREATE,
    update=update,
    update_endpoint=UPDATE,
    delete=lambda decl, live: Call("DELETE", f"{_base(decl)}/{decl.names['name']}"),
    confirm_absent=_confirm_absent,
    identity_keys=("name", "vmid", "node", "type"),
    resolve=resolve,
    refusals=refusals,
    task_node=lambda decl: decl.names["node"],
    task_methods=("POST", "DELETE"),
    not_exported=(
        "a snapshot is exported with its guest: the guest's entry lists it under snapshots: "
        "(salt_proxmox.export.guests)"
    ),
)
