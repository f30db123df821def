"""What the HA families share: their ids, their reads and writes of pve-ha-manager's section
configs, and the release that holds each.

Source: pve-ha-manager ``src/PVE/API2/HA/{Resources,Groups,Rules}.pm`` and ``src/PVE/HA/Config.pm``.

- Privileges (each method's ``permissions``): every read Sys.Audit on ``/``; every create, update
  and delete Sys.Console on ``/`` (the ``provision`` token needs it; no Sys.Modify).
- Each object is one section of a config file under ``/etc/pve/ha/``; a read answers it with the
  file's ``digest``, and an update takes that digest (``PVE::SectionConfig::assert_if_modified``):
  a change made between the plan's read and the write is refused by PVE, never overwritten.
- PVE 9 migrated HA groups to HA rules (``HA/Config.pm`` ``have_groups_been_migrated``): there,
  every group method dies ``cannot index groups: ha groups have been migrated to rules`` (HTTP
  500, never an empty list) and a resource's ``group`` is refused (``invalid parameter 'group': ha
  groups have been migrated to rules``); PVE 8 has no ``/cluster/ha/rules``. So a group on 9 and
  a rule on 8 are refused at plan naming the other (``release_refusal``), with the release read
  once per run (``facts.release``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from salt_proxmox.errors import DeclarationError, Refused, shown
from salt_proxmox.guest.ha_owned import SID
from salt_proxmox.pve.client import api_path
from salt_proxmox.pve.facts import release
from salt_proxmox.pve.listing import get_rows, node_names
from salt_proxmox.simple.fields import Field, live_values
from salt_proxmox.simple.spec import Call, Declared
from salt_proxmox.wire.propstring import text_problem

#: ``pve-configid`` (pve-common ``JSONSchema.pm`` ``pve_verify_configid``): an HA group's or rule's id.
CONFIG_ID = re.compile(r"^[a-z][a-z0-9_\-]+$", re.IGNORECASE | re.ASCII)
#: A node with its optional priority (``HA/Groups.pm``/``Rules/NodeAffinity.pm`` ``nodes``:
#: ``<node>[:<pri>]``, pve-common ``pve-ha-group-node``).
NODE_PRIORITY = re.compile(r"^[a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?(:\d+)?$", re.ASCII)


def check_nodes(value: str) -> str | None:
    """None when every item of a canonical ``nodes`` set is ``<node>[:<priority>]``."""
    bad = [item for item in value.split(",") if not NODE_PRIORITY.match(item)]
    return f"{', '.join(bad)}: not <node>[:<priority>]" if bad else None


def check_sids(value: str) -> str | None:
    """None when every item of a canonical ``resources`` set is ``vm:<vmid>``/``ct:<vmid>``."""
    bad = [item for item in value.split(",") if not SID.match(item)]
    return f"{', '.join(bad)}: not vm:<vmid> or ct:<vmid>" if bad else None


def unknown_nodes(ctx, nodes: str) -> list[str]:
    """The nodes of a canonical ``nodes`` set (``<node>[:<priority>],…``) that are not cluster members:
    not in ``GET /nodes`` (pve-manager ``API2/Nodes.pm`` ``index``, read credential), the list
    ``PVE::Cluster::check_node_exists`` consults (a standalone node lists itself, as ``Rules.pm``
    exempts the local node). Raises what ``listing.get_rows`` raises."""
    members = set(node_names(ctx.client, ctx.broker.read()))
    named = sorted({item.split(":", 1)[0] for item in nodes.split(",") if item})
    return [node for node in named if node not in members]


def configured_sids(ctx) -> set[str]:
    """The sids of every HA resource configured, ``ignored`` ones included (``GET
    /cluster/ha/resources``, Sys.Audit on ``/``, read credential): what ``HA/Config.pm``
    ``service_is_configured`` tests. Raises what ``listing.get_rows`` raises."""
    rows = get_rows(ctx.client, "cluster/ha/resources", ctx.broker.read(), what="HA resources")
    return {str(row["sid"]) for row in rows if row.get("sid")}


def check_comment(value: str) -> str | None:
    """One line of text (``HA/Resources.pm`` ``comment``: ``maxLength 4096``)."""
    return text_problem(value) or ("longer than 4096 characters" if len(value) > 4096 else None)


COMMENT = Field("text", check=check_comment)
NODES = Field("set", separator=",", check=check_nodes)


def digest_guard(ctx, credential, decl: Declared, live: Mapping[str, object]) -> dict:
    """The digest of the section config judged (``assert_if_modified`` checks it)."""
    digest = live.get("digest")
    return {"digest": str(digest)} if isinstance(digest, str) and digest else {}


def release_refusal(ctx, decl: Declared, wants: int) -> None:
    """Raise Refused when the cluster's release (``facts.release``) is not PVE ``wants`` for an
    object of that release only: a group (8) on 9, a rule (9) on 8, naming the other."""
    found = release(ctx)
    if found.major == wants:
        return
    if wants == 8:
        raise Refused(
            f"{decl.label}: the cluster runs PVE {found.release}, which migrated HA groups to HA rules "
            "(pve-ha-manager API2/HA/Groups.pm: `cannot index groups: ha groups have been migrated to "
            "rules`). Declare a node-affinity rule under proxmox:ha_rules instead. Nothing was written."
        )
    raise Refused(
        f"{decl.label}: the cluster runs PVE {found.release}, which has no HA rules (they came with PVE "
        "9, pve-ha-manager API2/HA/Rules.pm). Declare an HA group under proxmox:ha_groups instead, or "
        "upgrade the cluster. Nothing was written."
    )


def release_listing(ctx, kind: str, wants: int | None) -> list[tuple[Call, dict]]:
    """``proxmox.export``'s listing of HA ``kind`` (``groups``, ``rules``, ``resources``):
    ``GET /cluster/ha/<kind>`` on PVE ``wants`` (any release when None), none on another release, where
    the kind does not exist (PVE 9 answers groups with a 500; PVE 8 has no rules: ``release_refusal``)."""
    if wants is not None and release(ctx).major != wants:
        return []
    return [(Call("GET", f"cluster/ha/{kind}"), {})]


def identify_by_id(noun: str, fields: Mapping[str, Field]) -> Callable[..., Declared]:
    """The ``identify`` of an HA family keyed by a pve-configid (a group, a rule): ``name`` checked
    against ``CONFIG_ID``; another key is refused naming ``fields``. Raises DeclarationError."""

    def identify(state_id: str, target: str, name: object = None, **extra: object) -> Declared:
        if extra:
            raise DeclarationError(
                f"unknown key(s) {', '.join(sorted(extra))}: an {noun} has name, {', '.join(fields)}"
            )
        if not isinstance(name, str) or not CONFIG_ID.match(name):
            raise DeclarationError(
                f"name: {shown(name)} is not an {noun} id (a letter, then letters, digits, - or _)"
            )
        return Declared(state_id, target, identity=name, label=f"{noun} {name}", names={"name": name})

    return identify


def parse_section(fields: Mapping[str, Field], noun: str) -> Callable[[object, Declared], dict]:
    """The ``parse`` of an HA family's read (``GET /cluster/ha/<kind>/<id>``: one section of its
    config and the file's ``digest``): the canonical ``fields`` values and the ``digest``. The
    parse raises ValueError for another shape."""

    def parse(data: object, decl: Declared) -> dict:
        if not isinstance(data, Mapping):
            raise ValueError(f"expected the {noun} as an object")
        values = live_values(fields, data)
        values["digest"] = str(data.get("digest") or "")
        return values

    return parse


def form_of(
    fields: Mapping[str, Field], values: Mapping[str, object], wire: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The form keys of canonical ``values``: every value but a cleared text (``''``), a 0 included
    (``max_restart: 0`` is not PVE's default), each under PVE's name (``wire``: declared key -> PVE's)."""
    names = wire or {}
    return {names.get(key, key): fields[key].wire(value) for key, value in values.items() if value != ""}


def section_path(kind: str, decl: Declared) -> str:
    """``cluster/ha/<kind>/<id>``: one object of an HA section config (``kind``: resources, groups,
    rules)."""
    return api_path("cluster", "ha", kind, decl.names["name"])


def section_calls(
    kind: str, id_key: str, fields: Mapping[str, Field], wire: Mapping[str, str] | None = None
) -> dict[str, object]:
    """The ``ObjectSpec`` calls every HA family shares: the read and delete of ``section_path``, the
    create ``POST cluster/ha/<kind>`` with ``id_key`` and the declared values (``form_of``), and the
    digest each update carries (``digest_guard``)."""
    return {
        "read": lambda decl: Call("GET", section_path(kind, decl)),
        "create": lambda decl: Call(
            "POST",
            f"cluster/ha/{kind}",
            form={id_key: decl.names["name"], **form_of(fields, decl.values, wire)},
        ),
        "delete": lambda decl, live: Call("DELETE", section_path(kind, decl)),
        "write_guard": digest_guard,
    }
