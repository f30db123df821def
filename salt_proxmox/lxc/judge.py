"""Declared against live: what a container write would change, and what it must refuse (pure).

One function, ``judge``, decides for both the plan (``test=True``) and the apply, so they cannot
disagree about drift. Its answer is a ``guest.change.Change``: plain data (``put``, ``clear``,
``resize``, ``refuse``, ``drift``) the shared guest lifecycle writes from. What a container's
pending section adds is judged by ``guest.verdict`` with the container family (``lxc.family.LXC``:
``pct set <vmid> --revert <key>`` as the remedy, ``schema.applies_live`` as its hotplug rule).

Root-only rules follow pve-container ``src/PVE/LXC.pm`` ``check_ct_modify_config_perm`` (PVE 9,
6.x): it returns early only for ``$authuser eq 'root@pam'``, and an API token is never that, so
``devN``, bind/device mount points (added, or rewritten as one), any feature on a privileged
guest, and any feature change but ``nesting`` are root writes (``Change.root_write``): written
through the target's root lane when it has one, refused at plan with the ``pct set`` command to
run on the node, and the lane to configure, when it has none (``guest.lane.route``). A volume
write to a guest with ``protection: 1`` is refused too (``lxc.refusals``).
"""

from __future__ import annotations

from collections.abc import Mapping

from salt_proxmox.guest.change import Change, live_text
from salt_proxmox.guest.identity import vmid_refusal
from salt_proxmox.guest.rules import (
    compared_as,
    description_change,
    judge_each,
    judge_scalar,
    put_or_clear,
    root_only_at_create_refusal,
    root_only_refusal,
)
from salt_proxmox.lxc import rawkeys, schema
from salt_proxmox.lxc.props import LxcDeclaration
from salt_proxmox.lxc.refusals import protected_volume_refusals
from salt_proxmox.lxc.schema import parse_mountpoint
from salt_proxmox.pve.facts import DEFAULT_TAG_STYLE, LATEST, Release, TagStyle
from salt_proxmox.wire.propstring import (
    canonical_option,
    carry,
    changed_options,
    flag,
    option_map,
    pairs,
    print_pairs,
)
from salt_proxmox.wire.volumes import added_volume_refusal, judge_volume


def scalar_form(key: str, value: str, style: TagStyle = DEFAULT_TAG_STYLE) -> str:
    """One scalar value in its comparable spelling (see ``schema.Key.compare``); tags as the
    datacenter's ``style`` stores them (``TagStyle.unique``)."""
    spec = schema.SCALARS[key]
    return compared_as(spec.compare, value, style, spec.form)


def features_sent(value: str) -> str:
    """``features`` as written: off keys dropped (PVE would otherwise count them, see below)."""
    return print_pairs(option_map(value, schema.FEATURES))


def _raw_features(value: str) -> dict[str, str]:
    """``features`` parsed as PVE's ``parse_features`` sees it: nothing dropped."""
    return (
        {key: canonical_option(key, entry, schema.FEATURES) for key, entry in pairs(value)} if value else {}
    )


def features_need_root(live: str, sent: str | None, unprivileged: bool) -> bool:
    """PVE's own ``features`` rule, on the value actually sent (None: ``delete=features``).

    On a privileged guest every features write is root@pam's. On an unprivileged one, changing
    any key but ``nesting`` is — compared key for key with off keys kept, because PVE compares
    the raw strings (a live ``keyctl=0`` against a sent value without it is a change to PVE).
    """
    if not unprivileged:
        return True
    have = _raw_features(live)
    if sent is None:
        return not (not have or set(have) == {"nesting"})
    want = _raw_features(sent)
    return any(key != "nesting" and have.get(key, "") != want.get(key, "") for key in {*have, *want})


def root_only(decl: LxcDeclaration, key: str, value: str, why: str) -> str:
    """A refusal of a change to an existing guest, naming the ``pct set`` to run on its node; ``''``
    names ``--delete``."""
    return root_only_refusal(schema.WORDS, decl.vmid, decl.node, key, value, why)


def root_only_at_create(decl: LxcDeclaration, key: str, value: str, why: str) -> str:
    """A refusal of a root-only value on a container that does not exist yet
    (``root_only_at_create_refusal``, ``pct create`` with its ostemplate)."""
    template = decl.ostemplate or "<ostemplate>"
    return root_only_at_create_refusal(schema.WORDS, decl.vmid, decl.node, key, value, why, f" {template}")


_HOST_PATH = "A bind or device mount point."


def _feature_why(unprivileged: bool) -> str:
    return "A feature other than nesting." if unprivileged else "Any feature on a privileged guest."


def net_write(declared: str, live: str | None) -> str:
    """The NIC value to PUT: the declaration plus the live MAC when it names none.

    Without the live MAC, PVE generates a new one for a rewritten NIC — a new DHCP lease and a
    new IPv6 link-local address for a guest that only had its MTU edited.
    """
    want = carry(dict(pairs(declared)), dict(pairs(live)) if live is not None else None, "hwaddr")
    return print_pairs(want, lead=schema.NET.lead)


def _net_same(declared: str, live: str) -> bool:
    want = option_map(declared, schema.NET)
    have = option_map(live, schema.NET)
    if "hwaddr" not in want:
        have.pop("hwaddr", None)  # PVE generated it; not declared, not drift
    return want == have


def _both_host_paths(declared: str, live: str) -> bool:
    """True when both values are bind or device mount points (a host path, no volume to keep)."""
    return bool(parse_mountpoint(declared).host_path and parse_mountpoint(live).host_path)


def _dev_same(declared: str, live: str) -> bool:
    return option_map(declared, schema.DEV) == option_map(live, schema.DEV)


def judge(
    decl: LxcDeclaration,
    live: Mapping[str, object],
    style: TagStyle = DEFAULT_TAG_STYLE,
    ours: LxcDeclaration | None = None,
) -> Change:
    """Compare ``decl`` with a live config (``GET .../config`` data) and say what to do.

    ``ours`` (the declaration recorded in the ownership row) does not change a container's verdict:
    every container key is compared with its live value.

    ``style``: the datacenter's tag style (``salt_proxmox.pve.facts.tag_style``), which decides
    whether tag case and order are spelling or a change. Pure: no I/O. Never raises for a live
    value it cannot parse; such a key is drift with a refusal naming it.
    """
    change = Change()
    drift: set[str] = set()
    unprivileged = is_unprivileged(live)
    judge_each(
        {k: v for k, v in decl.config.items() if k != rawkeys.KEY},
        live,
        change,
        drift,
        lambda key, want, have: _judge_key(
            decl, key, (schema.indexed(key) or ("", 0))[0], want, have, unprivileged, change, drift, style
        ),
    )
    if rawkeys.KEY in decl.config:
        _judge_raw(decl, decl.config[rawkeys.KEY], live, change, drift)
    change.refuse.extend(protected_volume_refusals(decl.vmid, live, list(change.put)))
    change.drift.extend(sorted(drift))
    return change


def _judge_raw(
    decl: LxcDeclaration, want: str, live: Mapping[str, object], change: Change, drift: set[str]
) -> None:
    """The raw ``lxc.*`` lines (``lxc.rawkeys``): an ordered list, so any other text is a change,
    written by root in the node's config file (no API call takes them): a root write of the whole
    text (``''``: every raw line removed), refused with the file to edit when there is no lane, and
    refused while the config holds a ``lock`` (pve-guest-common ``AbstractConfig.pm`` ``check_lock``,
    which the file write honours as ``pct set`` does)."""
    have = rawkeys.live_text(live)
    if want == have:
        return
    drift.add(rawkeys.KEY)
    lock = live_text(live.get("lock"))
    if lock:
        change.refuse.append(
            f"{rawkeys.KEY}: CT {decl.vmid} is locked ({lock}), and PVE changes no locked config "
            "(pve-guest-common AbstractConfig.pm check_lock). Plan again once the lock is gone."
        )
        return
    why = (
        f"Raw lxc.* lines ({rawkeys.diff(have, want)}): no API call writes them, only an edit of "
        f"/etc/pve/nodes/{decl.node}/lxc/{decl.vmid}.conf on node {decl.node} (pve-container LXC/Config.pm "
        "parse_pct_config)."
    )
    refusal = (
        f"{rawkeys.KEY}: {why} PVE lets only root on the node make this change, and an API token is never "
        f"root@pam. Edit the file by hand on node {decl.node}, then plan again."
    )
    change.root_write(rawkeys.KEY, want, refusal)


def _judge_key(
    decl: LxcDeclaration,
    key: str,
    family: str,
    want: str,
    have: str | None,
    unprivileged: bool,
    change: Change,
    drift: set[str],
    style: TagStyle = DEFAULT_TAG_STYLE,
) -> None:
    vmid = decl.vmid
    if key == "unprivileged":
        if flag(want) != flag(have or "0"):
            drift.add(key)
            change.refuse.append(
                f"unprivileged: live {have or '0'}, declared {want}. PVE refuses to change it (`unable to "
                "modify read-only option: 'unprivileged'`); only a backup and restore can, and that is a "
                "new guest."
            )
        return
    if key == "rootfs" or family == "mp":
        if want == "":
            if have is not None:
                drift.add(key)
                change.refuse.append(
                    f"{key}: detaching a mount point moves its volume to unusedN; do it by hand "
                    f"(`{schema.WORDS.command} set {vmid} --delete {key}`) if that is what you want."
                )
            return
        bind = root_only(decl, key, want, _HOST_PATH)
        if have is None:
            drift.add(key)
            if parse_mountpoint(want).host_path:
                if family == "mp":
                    change.root_write(key, want, bind)
                else:
                    change.refuse.append(bind)
            elif refusal := added_volume_refusal(vmid, key, parse_mountpoint(want)):
                change.refuse.append(refusal)
            else:
                change.put[key] = want
            return
        verdict = judge_volume(key, want, have, schema.VOLUMES)
        if verdict.root_only and family == "mp" and _both_host_paths(want, have):
            # A bind or device mount point rewritten as one: the whole value is its own volume.
            drift.add(key)
            change.root_write(key, want, bind)
        elif change.take_volume(key, verdict, bind):
            drift.add(key)
        return
    if family == "dev":
        same = have is None if want == "" else have is not None and _dev_same(want, have)
        if not same:
            drift.add(key)
            change.root_write(key, want, root_only(decl, key, want, "Device passthrough."))
        return
    if family == "net":
        put_or_clear(key, want, have, change, drift, lambda w, h: not _net_same(w, h), net_write)
        return
    spec = schema.SCALARS.get(key)
    if spec is None:
        drift.add(key)
        change.refuse.append(f"{key}: not a container config key this state manages.")
        return
    if key == "features":
        _judge_features(decl, want, have, unprivileged, change, drift, style)
        return
    judge_scalar(key, want, have, spec.default, lambda v: scalar_form(key, v, style), change, drift)


def _judge_features(
    decl: LxcDeclaration,
    want: str,
    have: str | None,
    unprivileged: bool,
    change: Change,
    drift: set[str],
    style: TagStyle,
) -> None:
    """``features``, judged on the value actually sent: PVE's root-only rule (``features_need_root``)
    decides whether it is written; all keys off is a ``delete``."""
    key = "features"
    wanted = "" if want == "" else scalar_form(key, want, style)
    had = "" if have is None else scalar_form(key, have, style)
    if wanted == had:
        return
    drift.add(key)
    sent = features_sent(want) if want else ""
    if features_need_root(have or "", sent or None, unprivileged):
        change.root_write(key, sent, root_only(decl, key, want, _feature_why(unprivileged)))
    elif sent == "":
        change.clear.append(key)
    else:
        change.put[key] = sent


def identity_refusals(decl: LxcDeclaration, recorded: Mapping[str, object] | None) -> list[str]:
    """What makes this declaration a different guest than the one its state recorded.

    A new vmid, or another ``ostemplate`` (consumed at create: another one is a new guest). A
    changed node is not identity: the read at the declared node settles it (docs/design.md §6).
    """
    if not recorded:
        return []
    reasons = vmid_refusal(schema.WORDS, decl.vmid, recorded)
    template = recorded.get("ostemplate")
    if decl.ostemplate is not None and template is not None and template != decl.ostemplate:
        reasons.append(
            f"ostemplate: {template} -> {decl.ostemplate}. A template is consumed at create; another one "
            "is a new guest. Declare a new state with a new vmid instead."
        )
    return reasons


def is_unprivileged(config: Mapping[str, object]) -> bool:
    """Whether ``config`` (a container's, as read or as a restore makes it) is unprivileged: its
    ``unprivileged`` flag set (pve-container ``LXC/Config.pm``: a boolean, unset is 0). Raises
    ValueError for a value that is no boolean."""
    return flag(live_text(config.get("unprivileged")) or "0") == "1"


def creates_unprivileged(decl: LxcDeclaration, release: Release = LATEST) -> bool:
    """Whether a create of ``decl`` makes an unprivileged container: ``unprivileged`` as declared,
    else ``release``'s default (pve-container ``src/PVE/API2/LXC.pm`` ``create_vm``: ``$unprivileged
    = 1 if !defined($unprivileged)`` since pve-container 6.0.6, PVE 9; privileged on PVE 8)."""
    declared = decl.config.get("unprivileged", "")
    if declared == "":
        return release.creates_unprivileged
    return flag(declared) == "1"


def uses_new_options(decl: LxcDeclaration) -> bool:
    """True when ``decl`` names an option only some releases know (``facts.NEW_IN_9``), so the
    plan must know the cluster's release to judge it."""
    return bool(release_refusals(decl, Release("8.0")))


def release_refusals(decl: LxcDeclaration, release: Release) -> list[str]:
    """Options ``decl`` names that ``release`` does not know (``facts.NEW_IN_9``: ``host-managed``
    of a NIC, ``idmap`` of a volume), one sentence each; PVE's ``parse_property_string`` would
    refuse them."""
    reasons = []
    for key, value in decl.config.items():
        family = (schema.indexed(key) or ("", 0))[0]
        if value == "" or not (family in ("net", "mp") or key == "rootfs"):
            continue
        kind = "net" if family == "net" else "volume"
        names = [name for name, _ in pairs(value, None if kind == "net" else "volume")]
        for option in release.unknown_options(kind, names):
            reasons.append(
                f"{key}: {option}= is an option of PVE 9; this cluster runs PVE {release.release}, whose "
                f"pve-container refuses it (`invalid key in comma-separated list property: {option}`). "
                "Leave it out, or upgrade the cluster first."
            )
    return reasons


def create_root(decl: LxcDeclaration) -> dict[str, str]:
    """The root keys of a create from a template, each with its refusal at create
    (``root_only_at_create``): a bind or device mount point ``mpN``, a ``devN``, and ``features``
    when PVE reserves them for root (``features_need_root``) on the container the create makes as
    declared (an undeclared ``unprivileged`` taken as PVE 9's default; on a PVE 8 cluster, which
    creates privileged, ``create_refusals`` refuses the features the token would then send). The
    create writes them through the root lane after the token's ``POST /nodes/{node}/lxc``
    (``guest.lane.create_write``; pve-container ``create_vm`` runs ``check_ct_modify_config_perm``
    over its form). A restore has none: its declared root keys are refused
    (``guest.apply.written_onto``)."""
    if decl.restore is not None:
        return {}
    unprivileged = creates_unprivileged(decl, LATEST)
    root = {}
    for key, value in decl.config.items():
        family = (schema.indexed(key) or ("", 0))[0]
        if not value:
            continue
        if family == "mp" and parse_mountpoint(value).host_path:
            root[key] = root_only_at_create(decl, key, value, _HOST_PATH)
        elif family == "dev":
            root[key] = root_only_at_create(decl, key, value, "Device passthrough.")
        elif key == "features" and features_need_root("", features_sent(value) or None, unprivileged):
            root[key] = root_only_at_create(decl, key, value, _feature_why(unprivileged))
        elif key == rawkeys.KEY:
            root[key] = (
                f"{key}: raw lxc.* lines are written in /etc/pve/nodes/{decl.node}/lxc/{decl.vmid}.conf, "
                f"which only root on node {decl.node} may edit. Create CT {decl.vmid} without them, add them "
                "to the file by hand, then plan again."
            )
    return root


def create_refusals(decl: LxcDeclaration, release: Release = LATEST) -> list[str]:
    """Why this declaration cannot be created with an API token (empty when it can).

    ``POST /nodes/{node}/lxc`` (pve-container ``src/PVE/API2/LXC.pm`` ``create_vm``): an
    ostemplate is required; an undeclared ``unprivileged`` is ``release``'s default
    (``creates_unprivileged``); root-only rules as in ``check_ct_modify_config_perm``, less the keys
    the root lane writes after the create (``create_root``, routed by ``guest.lane.route``); volumes
    only as new ``storage:GiB`` disks, so a create never attaches a volume it did not allocate;
    options ``release`` does not know (``release_refusals``).
    """
    reasons = list(release_refusals(decl, release))
    vmid = decl.vmid
    if decl.ostemplate is None and decl.restore is None:
        reasons.append(
            f"{schema.WORDS.label} {vmid} does not exist and the declaration has no ostemplate, so it cannot "
            "be created. Declare ostemplate (or restore: <backup volume>), or declare the node and vmid of "
            "the guest that exists."
        )
    unprivileged = creates_unprivileged(decl, release)
    laned = create_root(decl)
    for key, value in decl.config.items():
        family = (schema.indexed(key) or ("", 0))[0]
        if value == "" or key in laned:
            continue
        if key == "features" and features_need_root("", features_sent(value) or None, unprivileged):
            reasons.append(
                root_only_at_create(decl, key, value, _feature_why(unprivileged))
                + " Or declare unprivileged: 1, which PVE 9 creates by default."
            )
        elif key == "rootfs" or family == "mp":
            if parse_mountpoint(value).host_path:
                reasons.append(root_only_at_create(decl, key, value, _HOST_PATH))
            elif refusal := added_volume_refusal(vmid, key, parse_mountpoint(value)):
                reasons.append(refusal)
    if laned and decl.start:
        # create_vm starts the container inside its task (``start``), before the lane write.
        reasons.append(
            f"start: {', '.join(laned)} are written through the root lane after the create, and start: true "
            "starts the container inside the create task, before that write. Declare status: running instead "
            "(the container is started once its config is written)."
        )
    if "rootfs" not in decl.config and any(k.startswith("mp") for k in decl.config):
        reasons.append("rootfs: mount points are declared but rootfs is not (PVE: `rootfs' not set`).")
    return reasons


def create_form(decl: LxcDeclaration) -> dict[str, str]:
    """The ``POST /nodes/{node}/lxc`` form: declared keys, empties dropped, features without off
    keys, ``start`` only when asked; not the root keys (``create_root``: the lane writes them after
    it). Refusals are ``create_refusals``'s to check first."""
    form = {"vmid": str(decl.vmid)}
    if decl.ostemplate is not None:
        form["ostemplate"] = decl.ostemplate
    laned = create_root(decl)
    for key, value in decl.config.items():
        if value == "" or key in laned:
            continue
        if key == "features":
            value = features_sent(value)
            if not value:
                continue
        form[key] = value
    if decl.pool:
        form["pool"] = decl.pool  # create_vm adds the new guest to it (PVE::Pool add_vm_to_pool)
    if decl.start:
        form["start"] = "1"
    return form


def stored_config(live: Mapping[str, object]) -> dict[str, str]:
    """A live config as returns may show it: no description, digest, lock, env or raw ``lxc``."""
    return {
        key: text
        for key, value in live.items()
        if key not in schema.NEVER_STORED and key != "lxc" and (text := live_text(value)) is not None
    }


def operator_view(live: Mapping[str, object]) -> dict[str, str]:
    """A live config as an operator asks for it (``proxmox.lxc_config``): ``stored_config`` with the
    description, the operator's own notes, put back; ``env`` (it may hold secrets), digest, lock and
    raw ``lxc`` values stay out."""
    view = stored_config(live)
    description = live_text(live.get("description"))
    if description is not None:
        view["description"] = description
    return view


def shown(key: str, value: str | None) -> object:
    """A value as a return or a comment may show it; a description only by its length
    (docs/design.md §6: notes a human wrote are never repeated)."""
    if value is None:
        return None
    if key in schema.NEVER_STORED:
        return f"<{len(value.rstrip())} characters>"
    return value


def key_change(key: str, old: str | None, new: str | None) -> dict:
    """What a return shows for one config key going from ``old`` (live; None: absent) to ``new`` (to
    write; ``''``: cleared, None: absent).

    - ``description``: ``{"diff": <unified diff>}``, multi-line, as ``diff -u`` writes it, trailing
      white space aside (it is the operator's own text; it still never reaches grains).
    - property strings (``netN``, ``mpN``, ``rootfs``, ``devN``, ``features``, ``startup``):
      ``{"old", "new"}`` holding only the sub-keys that differ, in PVE's print order
      (``propstring.changed_options``).
    - any other key never stored (``schema.NEVER_STORED``): by its length only.
    - the rest: ``{"old", "new"}`` as PVE spells them.
    """
    if key == "description":
        # Compared without trailing white space (rules.scalar_form), so shown without it too.
        return description_change(old, new)
    if key in schema.NEVER_STORED:
        return {"old": shown(key, old), "new": shown(key, new)}
    form = schema.property_format(key)
    if form is not None:
        shown_old, shown_new = changed_options(old, new, form)
        return {"old": shown_old, "new": shown_new}
    return {"old": old, "new": new}
