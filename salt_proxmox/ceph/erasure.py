"""Erasure-coded Ceph pools: a ``proxmox_ceph_pool`` declaring ``erasure_coding``.

Source: pve-manager ``PVE/API2/Ceph/Pool.pm`` (``createpool``, ``$ec_format``,
``ec_parse_and_check``, ``$add_storage``, ``destroypool``) and ``PVE/Ceph/Tools.pm``
(``create_ecprofile``, ``get_ecprofile_name``, ``set_pool``), the same on ``stable-8`` (PVE 8) and
``master`` (PVE 9):

- ``erasure-coding`` is the property string ``k=<int>,m=<int>[,failure-domain=<domain>]
  [,device-class=<class>][,profile=<profile>]``: ``k`` at least 2, ``m`` at least 1, both required
  even beside ``profile``; ``failure-domain`` defaults to ``host``.
- The declared name ``<name>`` is two pools: ``<name>-data`` (``pool_type`` erasure,
  ``allow_ec_overwrites``, the erasure-code profile ``pve_ec_<name>`` that the create makes unless
  ``profile`` names an existing one) and ``<name>-metadata`` (replicated, ``pg_num`` 32). ``size``,
  ``min_size`` and ``crush_rule`` are the metadata pool's (the data pool's size is ``k+m``, its rule
  the one Ceph makes from the profile); ``pg_num`` is the data pool's; ``application``,
  ``pg_autoscale_mode`` and the pool options go to both and are compared on the data pool.
- ``add_storages`` defaults to 1 for an erasure-coded create: PVE adds the RBD storage ``<name>``
  (``pool`` ``<name>-metadata``, ``data-pool`` ``<name>-data``, content ``rootdir,images``) after
  both pools are made, so a storage id ``<name>`` already defined fails the task with both pools
  made: refused at plan.
- ``setpool`` on an erasure-coded pool drops ``size`` and ``crush_rule`` (``set_pool``: "cannot set
  ... for erasure coded pool"), so an update is sent to the pool that holds each key.
- PVE's API shows no erasure-code profile (``lspools`` and ``getpool`` omit
  ``erasure_code_profile``): the read sees the data pool's type and its size ``k+m``; a profile is
  fixed once a pool uses it (Ceph ``OSDMonitor.cc`` refuses ``osd erasure-code-profile set`` of a
  profile in use without ``--force``), so a change of what the read shows is refused at plan.
- ``destroypool`` destroys one pool: the data pool's DELETE carries ``remove_ecprofile`` 1 for the
  profile the create made (0 for a declared ``profile``, which is not this pool's) and
  ``remove_storages`` 1 for PVE's own storage ``<name>``; the metadata pool's DELETE follows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from salt_proxmox.errors import shown
from salt_proxmox.pve.client import api_path

#: The bucket types of Ceph's CRUSH map (ceph ``src/osd/OSDMap.cc`` ``_build_crush_types``): a
#: failure domain is one of them.
CRUSH_TYPES = (
    "osd",
    "host",
    "chassis",
    "rack",
    "row",
    "pdu",
    "pod",
    "room",
    "datacenter",
    "zone",
    "region",
    "root",
)
#: A CRUSH device class or profile name as Ceph takes it (no white space, ``=`` or ``,``, which
#: would split the property string).
_WORD = re.compile(r"^[A-Za-z0-9_.-]+\Z")
#: ``$ec_format``'s keys, in the order the canonical property string lists them.
EC_KEYS = ("k", "m", "failure-domain", "device-class", "profile")
#: Keys ``setpool`` sets on the metadata pool (``createpool``: "'size', 'min_size' and
#: 'crush_rule' parameters will be applied to the metadata pool").
METADATA_KEYS = ("size", "min_size", "crush_rule")


def data_pool(name: str) -> str:
    """``<name>-data``, the erasure-coded pool ``createpool`` makes."""
    return f"{name}-data"


def metadata_pool(name: str) -> str:
    """``<name>-metadata``, the replicated pool ``createpool`` makes beside it."""
    return f"{name}-metadata"


def profile_name(name: str) -> str:
    """``pve_ec_<name>`` (``PVE/Ceph/Tools.pm`` ``get_ecprofile_name``)."""
    return f"pve_ec_{name}"


def parse_ec(value: object) -> dict[str, object]:
    """A declared ``erasure_coding`` (a mapping, or PVE's property string) → ``{k, m,
    failure-domain, device-class?, profile?}`` with ``failure-domain`` defaulted to ``host``.
    Raises ValueError naming the key and rule (``$ec_format``)."""
    if isinstance(value, str):
        items: dict[str, object] = {}
        for part in value.split(","):
            key, sep, text = part.partition("=")
            if not sep or key.strip() in items:
                raise ValueError(
                    f"{shown(part)} is not one key=value of k, m, failure-domain, device-class, profile"
                )
            items[key.strip()] = text.strip()
    elif isinstance(value, Mapping):
        items = {str(key).replace("_", "-"): text for key, text in value.items()}
    else:
        raise ValueError(
            f"{shown(value)} is not k=<int>,m=<int>[,failure-domain=][,device-class=][,profile=]"
        )
    unknown = sorted(set(items) - set(EC_KEYS))
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(unknown)}: erasure coding has {', '.join(EC_KEYS)}")
    out: dict[str, object] = {}
    for key, least in (("k", 2), ("m", 1)):
        text = items.get(key)
        number = text if isinstance(text, int) and not isinstance(text, bool) else None
        if isinstance(text, str) and text.isdigit():
            number = int(text)
        if number is None or number < least:
            raise ValueError(
                f"{key}: {shown(text)} is not a whole number of at least {least} ($ec_format minimum)"
            )
        out[key] = number
    domain = items.get("failure-domain") or "host"
    if domain not in CRUSH_TYPES:
        raise ValueError(
            f"failure-domain: {shown(domain)} is not a CRUSH bucket type ({', '.join(CRUSH_TYPES)}), "
            "and Ceph cannot make the profile's rule from it"
        )
    out["failure-domain"] = domain
    for key in ("device-class", "profile"):
        text = items.get(key)
        if text in (None, ""):
            continue
        if not isinstance(text, str) or not _WORD.match(text):
            raise ValueError(f"{key}: {shown(text)} is not a Ceph name (letters, digits, '_', '.', '-')")
        out[key] = text
    return out


def canonical(value: object) -> str:
    """``erasure_coding`` as one property string in ``EC_KEYS`` order. Raises ValueError (``parse_ec``)."""
    ec = parse_ec(value)
    return ",".join(f"{key}={ec[key]}" for key in EC_KEYS if key in ec)


def live_values(rows: list[Mapping[str, object]], name: str, declared: str, parse_row) -> dict | None:
    """The live values of erasure-coded pool ``name`` from the ``lspools`` rows, or None when
    neither of its pools is listed. ``size``, ``min_size`` and ``crush_rule`` are the metadata
    pool's, the rest the data pool's; ``erasure_coding`` is the declared string when the read agrees
    with it (both pools, the data pool erasure-coded of size ``k+m``), else what the read shows."""
    by_name = {row.get("pool_name"): row for row in rows}
    data, meta = by_name.get(data_pool(name)), by_name.get(metadata_pool(name))
    if data is None and meta is None:
        return None
    live = parse_row(data) if data is not None else {}
    if meta is not None:
        meta_live = parse_row(meta)
        live.update({key: meta_live[key] for key in METADATA_KEYS})
    ec = parse_ec(declared)
    missing = [pool for pool, row in ((data_pool(name), data), (metadata_pool(name), meta)) if row is None]
    if missing:
        live["erasure_coding"] = f"{' and '.join(missing)} missing"
    elif data.get("type") != "erasure":
        live["erasure_coding"] = f"{data_pool(name)} is {data.get('type') or 'not erasure-coded'}"
    elif data.get("size") != ec["k"] + ec["m"]:
        live["erasure_coding"] = f"k+m={data.get('size')}"
    else:
        live["erasure_coding"] = declared
    return live


def failure_domains(tree: object, domain: str) -> int:
    """How many CRUSH buckets of type ``domain`` hold an OSD in ``GET /nodes/{node}/ceph/osd``'s
    tree (pve-manager ``PVE/API2/Ceph/OSD.pm`` ``index``: ``root.children`` nested ``children``,
    each with ``type``); ``osd`` counts OSDs. Raises ValueError for another shape."""
    root = tree.get("root") if isinstance(tree, Mapping) else None
    if not isinstance(root, Mapping):
        raise ValueError("the OSD tree holds no root")

    def walk(node: Mapping, inside: bool) -> tuple[int, bool]:
        children = node.get("children") or []
        if not isinstance(children, list):
            raise ValueError("an OSD tree bucket's children is not a list")
        count, has_osd = 0, node.get("type") == "osd"
        for child in children:
            if isinstance(child, Mapping):
                sub, osd = walk(child, inside or node.get("type") == domain)
                count, has_osd = count + sub, has_osd or osd
        if node.get("type") == domain and has_osd and not inside:
            count += 1
        return count, has_osd

    return walk(root, False)[0]


def domain_problem(label: str, ec: Mapping[str, object], count: int) -> str | None:
    """The refusal when fewer failure domains hold OSDs than ``k+m``: CRUSH puts each of the k+m
    chunks in its own failure domain (the profile's rule ``chooseleaf indep`` of that type, ceph
    ``ErasureCode::create_rule``), so its placement groups stay undersized (``PG_DEGRADED``) for
    good, and below ``min_size`` (``k+1``) inactive."""
    k, m, domain = ec["k"], ec["m"], ec["failure-domain"]
    if count >= k + m:
        return None
    return (
        f"{label}: erasure coding k={k},m={m} places {k + m} chunks in distinct failure domains of type "
        f"{domain}, and the Ceph cluster has {count} {domain} bucket(s) holding an OSD (GET "
        "/nodes/{node}/ceph/osd), so its placement groups would never be fully placed (undersized, "
        f"PG_DEGRADED{', and inactive below k+1' if count < k + 1 else ''}). Add OSDs in more {domain}s, "
        "or declare a smaller k+m or a wider failure-domain (osd)."
    )


def storage_problem(label: str, name: str, rows: list[Mapping[str, object]]) -> str | None:
    """The refusal when a storage ``<name>`` is already defined: ``createpool``'s ``$add_storage``
    (``PVE::API2::Storage::Config->create``: "storage ID '<name>' already defined") runs after both
    pools are made and fails the task, leaving them made."""
    if any(row.get("storage") == name for row in rows):
        return (
            f"{label}: storage {name} is already defined, and PVE adds the pool's RBD storage under that id "
            "after making both pools (PVE/API2/Ceph/Pool.pm createpool add_storages), so the task would fail "
            f"with the pools made (`storage ID '{name}' already defined`). Remove or rename storage {name}, "
            "or declare another pool name."
        )
    return None


def immutable_problem(label: str, live: Mapping[str, object], declared: str) -> str | None:
    """The refusal of an ``erasure_coding`` the live pools do not show: Ceph fixes a profile once a
    pool uses it and a pool's profile for its life (``osd pool set`` has no ``erasure_code_profile``)."""
    shown_live = live.get("erasure_coding")
    if shown_live == declared:
        return None
    return (
        f"{label}: erasure coding {shown_live} → {declared} cannot change: a pool's erasure-code profile "
        "(k, m, failure-domain, device-class) is fixed for its life in Ceph, and PVE makes both pools "
        f"together. Declare the pool as it is, or create another pool and move the disks to it."
    )


def create_notes(label: str, name: str, ec: Mapping[str, object]) -> list[str]:
    """What an erasure-coded create makes besides what the plan lists (``createpool``)."""
    profile = ec.get("profile") or f"{profile_name(name)} (made by the create)"
    return [
        f"{label}: PVE makes pools {data_pool(name)} (erasure-coded, profile {profile}, allow_ec_overwrites) "
        f"and {metadata_pool(name)} (replicated, pg_num 32; size, min_size and crush_rule are its), and adds "
        f"RBD storage {name} (pool {metadata_pool(name)}, data-pool {data_pool(name)})"
    ]


def delete_notes(label: str, name: str, ec: Mapping[str, object]) -> list[str]:
    """What an erasure-coded destroy removes (``destroypool`` of each pool)."""
    profile = (
        f"keeps profile {ec['profile']} (declared, not this pool's)"
        if ec.get("profile")
        else f"destroys profile {profile_name(name)}"
    )
    return [
        f"{label}: destroys pools {data_pool(name)} and {metadata_pool(name)} with their data and the "
        f"CRUSH rule of {data_pool(name)}, {profile}, and removes storage {name} (PVE refuses while it "
        "holds a disk)"
    ]


def delete_calls(path, name: str, ec: Mapping[str, object]) -> list[tuple[str, dict[str, str]]]:
    """``[(path, params)]`` of the two ``destroypool`` calls, data pool first (its DELETE removes
    the profile and PVE's storage ``<name>``, which names both pools)."""
    return [
        (
            path(data_pool(name)),
            {"remove_ecprofile": "0" if ec.get("profile") else "1", "remove_storages": "1"},
        ),
        (path(metadata_pool(name)), {"remove_ecprofile": "0"}),
    ]


def split_update(form: Mapping[str, str], name: str) -> list[tuple[str, dict[str, str]]]:
    """An update form → ``[(pool, form)]``: ``METADATA_KEYS`` to the metadata pool, the rest to the
    data pool (``set_pool`` drops ``size`` and ``crush_rule`` on an erasure-coded pool)."""
    meta = {key: value for key, value in form.items() if key in METADATA_KEYS}
    data = {key: value for key, value in form.items() if key not in METADATA_KEYS}
    return [(pool, part) for pool, part in ((data_pool(name), data), (metadata_pool(name), meta)) if part]


def osd_tree_path(node: str) -> str:
    """``GET /nodes/{node}/ceph/osd`` (Sys.Audit or Datastore.Audit on ``/``)."""
    return api_path("nodes", node, "ceph", "osd")
