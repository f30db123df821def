"""Storage definitions (``proxmox_storage``): one ``storage.cfg`` entry, cluster-wide.

Source: pve-storage 9.1.7 ``src/PVE/API2/Storage/Config.pm`` (``index``, ``create``, ``update``,
``delete``), ``src/PVE/Storage/Plugin.pm`` and the type tables of ``salt_proxmox.storage.types``.

- Read: the ``read`` credential cannot ``GET /storage/{storage}`` (``read`` asks Datastore.Allocate),
  so the object is its row of ``GET /storage`` (``index``: the storages the credential holds
  Datastore.Audit or Datastore.AllocateSpace on). A storage missing from it is absent only when the
  credential holds one of those on ``/storage/<id>`` (``confirm_absent``); else it may be hidden.
- Create ``POST /storage`` ``{storage, type, <options>, <secrets>}``; update ``PUT /storage/{id}``
  with the changed options, ``delete`` for the cleared ones, the secrets when ``secret_serial``
  changed, and the listing's ``digest`` (``assert_if_modified``); delete ``DELETE /storage/{id}``,
  which removes the definition only (``delete``: ``on_delete_hook`` and the section; no volume is
  touched).
- ``type`` is identity; a fixed option (``types.Option.fixed``) never changes (``check_config``:
  ``can't change value of fixed parameter``): both refused at plan, naming a new storage id.
- An ``iscsi``/``iscsidirect`` storage's ``target`` (its IQN) is declared ``iscsi_target``
  (``types.WIRE_NAMES``): a state's ``target`` names the cluster. It is sent as PVE's ``target`` and read
  back from it; a ``target`` spelt like an iSCSI name on such a storage is refused by name
  (``target_problem``).
- Secrets (``StorageType.sensitive``): sent at create and when ``secret_serial`` differs from the
  one recorded in the ownership row; never read back, shown, stored or compared.
- What PVE fills in or spells its own way is never drift: only declared options are compared, in
  ``types.FIELDS``' spellings (``path`` of nfs/cifs/cephfs undeclared is PVE's ``/mnt/pve/<id>``).
- Refused at plan, since PVE would drop or accept them silently: a ``content`` the type does not
  take (``Plugin.pm`` ``decode_value``: "storage does not support content type", a warning), ``none``
  with another content (``unable to combine 'none' with other content types``), ``shared`` on a type
  that is always shared or always local, an option of another type or release, a ``nodes`` entry
  that is not a cluster node (``decode_value`` only checks the name's form).
- ``removal: destroy`` is refused while a guest has a volume there (the guest index and each guest's
  config, read with the read credential: a content listing hides guest volumes from a token without
  VM.Config.Disk), while a guest state of the same run declares a volume there (``declared_users``,
  from the run the memo holds: the formula runs storage before guests)
  or another storage names it as ``base`` (``delete``: "can't remove storage -
  storage is used as base of another storage").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from salt_proxmox.access.privileges import listing_privileges
from salt_proxmox.errors import DeclarationError, shown
from salt_proxmox.guest.absence import guest_configs
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.constraints import Endpoint, Rule
from salt_proxmox.pve.facts import release
from salt_proxmox.pve.listing import get_rows, rows_of
from salt_proxmox.simple.fields import canonical_values, deleted_keys, form_values, live_values
from salt_proxmox.simple.fields import secret_serial as secret_serial_value
from salt_proxmox.simple.spec import Call, Declared, ObjectSpec, audited_listing, export_by, listed_row
from salt_proxmox.storage.types import (
    ALL_OPTIONS,
    DECLARED_NAMES,
    FIELDS,
    ISCSI_NAME,
    TYPES,
    WIRE_NAMES,
    StorageType,
)

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.pve.client import Credential
    from salt_proxmox.run.context import PveContext

FAMILY = "storage"

#: pve-storage ``Storage.pm`` ``parse_storage_id`` (the ``pve-storage-id`` format).
STORAGE_ID = re.compile(r"^[a-z][a-z0-9\-_.]*[a-z0-9]$", re.IGNORECASE)
#: Guest config keys holding a volume: qemu-server ``Drive.pm`` (``ideN``, ``sataN``, ``scsiN``,
#: ``virtioN``, ``efidisk0``, ``tpmstate0``, ``unusedN``) and pve-container ``Config.pm`` (``rootfs``,
#: ``mpN``, ``unusedN``).
VOLUME_KEY = re.compile(r"^(?:ide|sata|scsi|virtio|mp|unused)\d+$|^(?:rootfs|efidisk0|tpmstate0)$")

_KEYS = ("name", "type", "adopt", "secret_serial")


def _rule(key: str) -> Rule | None:
    if key in ("storage", "type"):
        return Rule()
    field = FIELDS.get(DECLARED_NAMES.get(key, key))
    return field.rule() if field is not None else None


CREATE = Endpoint("POST /storage", ("storage", "type"), _rule)
UPDATE = Endpoint("PUT /storage/{storage}", (), _rule)


def _id_problem(name: str) -> str | None:
    if not STORAGE_ID.match(name):
        return (
            f"storage ID {shown(name)} is not valid (pve-storage-id: a letter, then letters, digits, -, _, .)"
        )
    return None


def identify(state_id: str, target: str, name: object = None, **extra: object) -> Declared:
    """A storage by its id (``name``). Raises DeclarationError for an unknown key or a bad id."""
    if extra:
        raise DeclarationError(f"unknown key(s) {', '.join(sorted(extra))}: absent takes name, removal")
    if not isinstance(name, str) or not name:
        raise DeclarationError("name: the storage ID is required (text)")
    problem = _id_problem(name)
    if problem:
        raise DeclarationError(f"name: {problem}")
    return Declared(state_id, target, identity=name, label=f"storage {name}", names={"name": name})


def target_problem(type: object, target: object) -> str | None:
    """None unless a storage declaration's ``target`` (the state's own argument: the cluster, a
    ``proxmox:targets`` name) is spelt like an iSCSI name (``types.ISCSI_NAME``) on an ``iscsi`` or
    ``iscsidirect`` storage, where PVE's own option of that name is the iSCSI target
    (``ISCSIPlugin.pm`` ``properties()``); then the sentence naming the spelling to use."""
    if type in ("iscsi", "iscsidirect") and isinstance(target, str) and ISCSI_NAME.match(target):
        return (
            f"target: {shown(target)} is an iSCSI name, but a state's target names the cluster "
            f"(proxmox:targets); declare the {type} storage's PVE option target as iscsi_target"
        )
    return None


def declaration_problem(declared: Mapping[str, object], target: object) -> str | None:
    """``target_problem`` of a storage declaration (``registry`` ``Kind.precheck``): ``declared`` is the
    state's arguments, ``target`` the state's own."""
    return target_problem(declared.get("type"), target)


def to_wire(form: Mapping[str, str]) -> dict[str, str]:
    """A create or update form in PVE's spellings (``types.WIRE_NAMES``: ``iscsi_target`` is sent as
    ``target``), the ``delete`` list too."""
    sent = {WIRE_NAMES.get(key, key): value for key, value in form.items()}
    if "delete" in sent:
        sent["delete"] = ",".join(WIRE_NAMES.get(key, key) for key in sent["delete"].split(","))
    return sent


def _option_problem(kind: StorageType, key: str) -> str:
    if key == "shared":
        how = "always shared" if kind.always_shared else "always local"
        return (
            f"shared: a {kind.name} storage is {how} (pve-storage Plugin.pm @SHARED_STORAGE, "
            f"{kind.source}), and PVE takes no shared option for it: leave it out"
        )
    takes = sorted(name for name, other in TYPES.items() if key in other.options)
    return (
        f"{key}: not an option of a {kind.name} storage ({kind.source}); "
        f"it is one of {', '.join(takes) or 'no type on PVE 9'}"
    )


def declare(
    state_id: str,
    target: str,
    name: object = None,
    type: object = None,
    adopt: object = False,
    secret_serial: object = None,
    **options: object,
) -> Declared:
    """A checked storage declaration: ``name`` (the storage id), ``type`` (one of ``types.TYPES``),
    the type's options as the API spells them, its secrets (``password``, ``keyring``, ...: kept in
    ``Declared.secrets``), ``secret_serial`` (an integer; the secrets are written again when it
    changes), ``adopt``. Raises DeclarationError naming each bad key and its rule."""
    probe = identify(state_id, target, name=name)
    kind = TYPES.get(type) if isinstance(type, str) else None
    if kind is None:
        raise DeclarationError(f"type: {shown(type)} is not a storage type ({', '.join(sorted(TYPES))})")
    problems, secrets, plain = [], {}, {}
    for key, value in options.items():
        if key not in ALL_OPTIONS:
            problems.append(f"{key}: not a storage option (unknown key)")
        elif key not in kind.options:
            problems.append(_option_problem(kind, key))
        elif key in kind.sensitive:
            if not isinstance(value, str) or not value:
                problems.append(f"{key}: expected non-empty text (a secret, never shown)")
            else:
                secrets[key] = value
        else:
            plain[key] = value
    try:
        values = canonical_values(FIELDS, plain)
    except DeclarationError as exc:
        problems += exc.problems
        values = {}
    content = str(values.get("content") or "")
    items = content.split(",") if content else []
    foreign = [item for item in items if item not in kind.content]
    if foreign:
        problems.append(
            f"content: a {kind.name} storage does not take {', '.join(foreign)} (takes "
            f"{', '.join(sorted(kind.content))}); PVE drops it with only a warning (Plugin.pm decode_value: "
            f"`storage does not support content type '{foreign[0]}'`)"
        )
    if "none" in items and len(items) > 1:
        problems.append(
            "content: `unable to combine 'none' with other content types` (Plugin.pm decode_value)"
        )
    if secret_serial is not None:
        number, problem = secret_serial_value(secret_serial, secrets)
        if problem:
            problems.append(problem)
        else:
            values["secret_serial"] = number
    if problems:
        raise DeclarationError(problems)
    found = probe.declaring({"type": kind.name, **values}, adopt)
    return Declared(**{**found.__dict__, "secrets": secrets})


def _type_of(data: Mapping) -> StorageType:
    kind = TYPES.get(str(data.get("type")))
    if kind is None:
        raise ValueError(f"type {data.get('type')!r} is not a storage type this product knows")
    return kind


def listed(rows: object, decl: Declared) -> dict | None:
    """``GET /storage`` → this storage's canonical options (every ``FIELDS`` key, cleared when PVE
    holds none), ``type`` and ``digest``; None when it is not listed. Raises ValueError for another
    shape. PVE lists no secret (``extract_sensitive_params``)."""
    row = listed_row(rows, "storage", lambda storage: storage == decl.names["name"])
    if row is None:
        return None
    _type_of(row)
    found = live_values(FIELDS, {DECLARED_NAMES.get(key, key): value for key, value in row.items()})
    found["type"] = str(row["type"])
    found["digest"] = str(row.get("digest") or "")
    return found


def _storage_path(decl: Declared) -> str:
    return api_path("storage", decl.names["name"])


def _form_values(decl: Declared) -> dict:
    return {key: value for key, value in decl.values.items() if key not in ("type", "secret_serial")}


def create(decl: Declared) -> Call:
    """``POST /storage``: the id, the type, every declared option set, the secrets."""
    form = {"storage": decl.names["name"], "type": str(decl.values["type"])}
    form.update(form_values(FIELDS, _form_values(decl)))
    form.update(decl.secrets)
    return Call("POST", "storage", form=to_wire(form))


def update(decl: Declared, live: Mapping[str, object]) -> Call | None:
    """``PUT /storage/{id}``: the declared options that differ, ``delete`` for the cleared ones, and
    the secrets when ``secret_serial`` differs from the recorded one. None when nothing is sent."""
    values = _form_values(decl)
    changed = {key: value for key, value in values.items() if live.get(key) != value}
    form = form_values(FIELDS, changed)
    gone = deleted_keys(changed, live)
    if gone:
        form["delete"] = ",".join(gone)
    if live.get("type") != decl.values["type"]:
        form["type"] = str(decl.values["type"])  # never sent: ``refusals`` refuses another type
    if "secret_serial" in decl.values and live.get("secret_serial") != decl.values["secret_serial"]:
        form.update(decl.secrets)
    return Call("PUT", _storage_path(decl), form=to_wire(form)) if form else None


#: A storage the listing lacks is absent only when the read credential may see it (pve-storage
#: ``API2/Storage/Config.pm`` ``index`` filters by Datastore.Audit or Datastore.AllocateSpace).
confirm_absent = audited_listing(
    "GET /storage",
    "storages",
    listing_privileges("storage"),
    lambda decl: f"/storage/{decl.names['name']}",
    "Datastore.Audit on /storage",
)


def write_guard(ctx: PveContext, credential: Credential, decl: Declared, live: Mapping[str, object]) -> dict:
    """``{digest}``: storage.cfg's digest from a fresh ``GET /storage`` (``update`` asserts it)."""
    rows = get_rows(ctx.client, "storage", credential, what="storages")
    row = listed_row(rows, "storage", lambda storage: storage == decl.names["name"])
    digest = (row or {}).get("digest")
    return {"digest": str(digest)} if digest else {}


def _major(ctx: PveContext) -> int:
    text = str(release(ctx).release)
    head = text.split(".", 1)[0]
    return int(head) if head.isdigit() else 9


def _cluster_nodes(ctx: PveContext) -> set[str]:
    rows = rows_of(ctx.reads.get(ctx.client, "nodes", ctx.broker.read()), "nodes")
    return {str(row.get("node")) for row in rows if row.get("node")}


def guest_volumes(ctx: PveContext, storage: str) -> list[str]:
    """``<CT|VM> <vmid> <key>`` for each volume a guest the read credential can see (the guest index,
    then each guest's config) holds on ``storage``. Raises what the reads raise."""
    found = []
    for row, config in guest_configs(ctx):
        kind, vmid = row["type"], row["vmid"]
        for key, value in sorted(config.items()):
            if VOLUME_KEY.match(key) and _volume_storage(value) == storage:
                found.append(f"{'CT' if kind == 'lxc' else 'VM'} {vmid} {key}")
    return found


def _volume_storage(value: object) -> str | None:
    """The storage a guest volume key's value names (``<storage>:...``, a mount point's ``volume=``
    too), or None."""
    if not isinstance(value, str):
        return None
    volume = value.split(",", 1)[0]
    volume = volume.split("=", 1)[1] if "=" in volume else volume
    return volume.split(":", 1)[0] if ":" in volume else None


def declared_users(ctx: PveContext, storage: str) -> list[str]:
    """``<state id> (<key>)`` for each volume key a guest state of this run (``RunMemo.chunks``, any place
    in the run: its create or write would need the storage) declares on ``storage``, on this target."""
    from salt_proxmox.registry import FAMILIES

    run = ctx.memo.chunks
    if run is None:
        return []
    found = []
    for state in (family.state for family in FAMILIES if family.guest):
        for chunk in run.declared(state, ctx.target.name, ctx.target.name):
            if chunk.fun != "present":
                continue
            for key, value in sorted(chunk.args.items()):
                if VOLUME_KEY.match(str(key)) and _volume_storage(value) == storage:
                    found.append(f"{chunk.state_id} ({key})")
    return found


def refusals(ctx: PveContext, decl: Declared, action: str, live: Mapping[str, object] | None) -> list[str]:
    """PVE's refusals and silent drops, predicted with the read credential (module docstring)."""
    name = decl.names["name"]
    found = []
    if action == "delete":
        users = guest_volumes(ctx, name)
        if users:
            found.append(
                f"{decl.label}: guests still have volumes on it ({', '.join(users)}); deleting the "
                f"definition "
                "would leave them unreachable. Move or remove those volumes first, then run again."
            )
        declared = declared_users(ctx, name)
        if declared:
            found.append(
                f"{decl.label}: guests this run declares name it ({', '.join(declared)}); their create or "
                "write would need the definition this state deletes. Move them to another storage in "
                "their declarations first, then run again."
            )
        for row in get_rows(ctx.client, "storage", ctx.broker.read(), what="storages", reads=ctx.reads):
            if str(row.get("base") or "").split(":", 1)[0] == name:
                found.append(
                    f"{decl.label}: storage {row.get('storage')} uses it as base, and PVE refuses (`can't "
                    f"remove "
                    "storage - storage is used as base of another storage`). Remove that one first."
                )
        return found
    kind = TYPES[str(decl.values["type"])]
    if live is not None and live.get("type") != kind.name:
        return [
            f"{decl.label} is a {live.get('type')} storage, and the type is its identity: a {kind.name} "
            f"storage "
            f"is another storage. Declare it under a new storage ID (and this one absent), never a re-create."
        ]
    if live is not None:
        for key, want in decl.values.items():
            option = kind.options.get(key)
            if option is not None and option.fixed and live.get(key) != want:
                found.append(
                    f"{key}: {decl.label} has {shown(live.get(key))}, and PVE refuses to change a fixed "
                    f"option "
                    f"(`update storage failed: can't change value of fixed parameter "
                    f"'{WIRE_NAMES.get(key, key)}'`, pve-common "
                    "SectionConfig.pm check_config). Declare it as it is, or define a new storage ID."
                )
    major = _major(ctx)
    on_release = kind.options_on(major)
    for key in decl.values:
        if key not in ("type", "secret_serial") and key not in on_release:
            found.append(
                f"{key}: a {kind.name} storage on PVE {major} takes no {key} ({kind.source}, stable-8)"
            )
    nodes = [node for node in str(decl.values.get("nodes") or "").split(",") if node]
    if nodes:
        known = _cluster_nodes(ctx)
        unknown = [node for node in nodes if node not in known]
        if unknown:
            found.append(
                f"nodes: {', '.join(unknown)} is not a node of this cluster ({', '.join(sorted(known))}); "
                f"PVE "
                "would keep it without checking (Plugin.pm decode_value). Name cluster nodes only."
            )
    return found


def side_effects(ctx: PveContext, decl: Declared, action: str) -> list[str]:
    """What a delete leaves: the data (``Config.pm`` ``delete`` removes the definition only)."""
    if action != "delete":
        return []
    return [
        f"{decl.label}: only the definition is removed; PVE never removes the data on it (volumes, "
        "backups, images stay where they are)"
    ]


def export_values(live: Mapping[str, object], decl: Declared) -> dict:
    """``proxmox.export``: a live storage's ``type`` and the options its type takes (``TYPES``) that it
    holds, no secret (PVE shows none) and no option left at none."""
    kind = TYPES[str(live["type"])]
    return {
        key: value
        for key, value in live.items()
        if key == "type"
        or (key in kind.options and key not in kind.sensitive and value not in (None, "", [], False))
    }


SPEC = ObjectSpec(
    family=FAMILY,
    noun="storage",
    declare=declare,
    identify=identify,
    read=lambda decl: Call("GET", "storage"),
    absence="not listed by GET /storage while the read credential holds Datastore.Audit on /storage/<id>",
    is_absent=lambda error, decl: False,
    parse=listed,
    create=create,
    create_endpoint=CREATE,
    update=update,
    update_endpoint=UPDATE,
    delete=lambda decl, live: Call("DELETE", _storage_path(decl)),
    confirm_absent=confirm_absent,
    write_guard=write_guard,
    listing=Call("GET", "storage"),
    listed=listed,
    refusals=refusals,
    side_effects=side_effects,
    recorded=("secret_serial",),
    export_names=export_by("storage"),
    export_values=export_values,
    export_secrets=lambda live: TYPES[str(live["type"])].sensitive & set(TYPES[str(live["type"])].options),
)
