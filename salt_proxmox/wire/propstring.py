"""Property strings (``key=value,key=value``) and the canonical spelling of their values.

PVE parses these with pve-common ``src/PVE/JSONSchema.pm`` (``parse_property_string``): items
split on ``,``, each ``key=value``, and at most one bare item taken as the format's
``default_key`` (``name`` is not one; the volume of ``rootfs``/``mpN`` is, and ``order`` of
``startup`` is). PVE prints them back in its own key order with defaults it chooses to show, so
values are compared as maps with each family's defaults dropped, never as strings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

#: Boolean spellings PVE's JSONSchema accepts for ``type => 'boolean'`` (pve-common
#: ``JSONSchema.pm`` ``check_type``: 1|0|true|false|yes|no|on|off, any case).
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})

#: What absence means for each family's keys (pve-container ``src/PVE/LXC/Config.pm``:
#: ``$netconf_desc``, ``$features_desc``, ``$dev_desc``, ``$rootfs_desc``/``$mp_desc``).
#: ``replicate`` defaults ON; everything else here defaults off. ``acl`` has no default (unset
#: means the storage's own), so it is not listed.
FAMILY_DEFAULTS: dict[str, dict[str, str]] = {
    "net": {"firewall": "0", "host-managed": "0", "link_down": "0", "type": "veth"},
    "features": {"force_rw_sys": "0", "fuse": "0", "keyctl": "0", "mknod": "0", "nesting": "0"},
    "dev": {"deny-write": "0"},
    "volume": {
        "backup": "0",
        "keepattrs": "0",
        "quota": "0",
        "replicate": "1",
        "ro": "0",
        "shared": "0",
    },
    # qemu-server ``PVE/QemuServer/Drive.pm`` ``%drivedesc_base`` and friends: ``media`` defaults to
    # disk, ``replicate`` on, ``shared`` and ``scsiblock`` off; ``backup`` has no schema default but
    # vzdump includes every drive without ``backup=0`` (``PVE/VZDump/QemuServer.pm``), so absent is 1.
    # ``$efidisk_fmt``/``%efitype_fmt``: ``efitype`` 2m, ``pre-enrolled-keys`` off, ``ms-cert`` 2011;
    # ``$tpmstate_fmt``: ``version`` v1.2.
    "drive": {
        "backup": "1",
        "media": "disk",
        "replicate": "1",
        "scsiblock": "0",
        "shared": "0",
        "efitype": "2m",
        "pre-enrolled-keys": "0",
        "ms-cert": "2011",
        "version": "v1.2",
    },
    # qemu-server ``PVE/QemuServer/Network.pm`` ``$net_fmt``.
    "qemu-net": {"firewall": "0", "link_down": "0"},
}

#: The keys PVE prints first in each family's property string, in order: the format's default key,
#: then its required keys; every other key follows sorted (pve-common ``src/PVE/JSONSchema.pm``
#: ``print_property_string``: default key, then ``sort keys`` of the non-optional, then the rest).
#: ``name`` is required in ``$netconf_desc``, ``mp`` in ``$mp_desc``; ``volume`` is the default key of
#: ``$rootfs_desc``/``$mp_desc``, ``path`` of ``$dev_desc``, ``order`` of pve-common's startup format.
PRINT_LEAD: dict[str, tuple[str, ...]] = {
    "net": ("name",),
    "volume": ("volume", "mp"),
    "dev": ("path",),
    "startup": ("order",),
    "features": (),
    "drive": ("volume",),
    "qemu-net": ("model",),
}

#: Keys whose value is a boolean, in any family (qemu-server: ``Drive.pm`` ``pre-enrolled-keys``,
#: ``Network.pm`` ``host-tunnel``, ``Agent.pm`` ``$agent_fmt``'s ``enabled``, ``fstrim_cloned_disks``,
#: ``freeze-fs`` and its aliases, ``CPUConfig.pm`` ``hidden``, ``$smbios1_fmt`` ``base64``,
#: ``Machine.pm`` ``enable-s3``/``enable-s4``).
#: pve-common ``JSONSchema.pm`` ``parse_property_string`` reads each with ``parse_boolean``:
#: 1/on/yes/true and 0/off/no/false, any case.
FLAG_KEYS = frozenset(
    {
        "base64",
        "enable-s3",
        "enable-s4",
        "enabled",
        "freeze-fs",
        "freeze-fs-on-backup",
        "fstrim_cloned_disks",
        "guest-fsfreeze",
        "hidden",
        "host-tunnel",
        "acl",
        "backup",
        "deny-write",
        "detect_zeroes",
        "firewall",
        "force_rw_sys",
        "fuse",
        "host-managed",
        "iothread",
        "keepattrs",
        "keyctl",
        "link_down",
        "mknod",
        "nesting",
        "pre-enrolled-keys",
        "quota",
        "replicate",
        "ro",
        "scsiblock",
        "shared",
        "snapshot",
        "ssd",
    }
)

#: Keys holding a ``;`` list whose order PVE does not keep meaningful: ``mountoptions`` of a
#: volume. Not ``mount`` of ``features``: pve-container ``src/PVE/LXC.pm``
#: ``check_ct_modify_config_perm`` compares each feature's old and new value as strings
#: (``$old ne $new``), so ``mount=nfs;cifs`` against a live ``cifs;nfs`` is a change only root@pam
#: may make; it is compared and sent verbatim.
SET_KEYS = frozenset({"mountoptions"})


def flag(value: object) -> str:
    """``'1'`` or ``'0'`` for any boolean spelling PVE accepts.

    Raises ValueError for anything else (``'2'``, ``'maybe'``).
    """
    if isinstance(value, bool):
        return "1" if value else "0"
    text = str(value).strip().lower()
    if text in _TRUE:
        return "1"
    if text in _FALSE:
        return "0"
    raise ValueError(f"{value!r} is not a boolean (1/0, true/false, yes/no, on/off)")


def pve_boolean(key: str, value: object) -> tuple[bool | None, str | None]:
    """A state option or call argument that is one of PVE's boolean parameters under another name
    (``full`` of a clone, ``force_stop`` → ``forceStop``), read as PVE reads it: pve-common
    ``JSONSchema.pm`` ``parse_boolean`` takes ``1``/``0``, ``true``/``false``, ``yes``/``no``,
    ``on``/``off`` in any case (``flag``), and YAML's booleans are those too.

    Returns ``(value, None)``, or ``(None, sentence naming key)`` for anything else (``n``, ``2``,
    None): such a value is refused before any request, never taken as truthy. The product's own
    switches (``adopt``, ``test``, ``reboot_for_pending``) mirror nothing of PVE's and take a real
    boolean only (``errors.boolean_problem``)."""
    try:
        return flag(value) == "1", None
    except ValueError:
        return None, (
            f"{key}: expected a boolean as PVE spells it (true/false, 1/0, yes/no, on/off), got {value!r}"[
                :200
            ]
        )


def text_problem(value: object) -> str | None:
    """None unless ``value`` is a boolean or a float where PVE takes text, else why and how to
    quote it. Salt reads pillar and SLS as YAML 1.1, where an unquoted ``on``, ``off``, ``yes``,
    ``no``, ``true`` or ``false`` is a boolean and ``1.10`` the number 1.1: the text written is
    gone, and sending ``1`` or ``1.1`` would store something else than what was meant."""
    if isinstance(value, bool):
        return (
            f"got the boolean {str(value).lower()} where PVE takes text: YAML reads an unquoted on, off, "
            "yes, no, true or false as a boolean; quote the text (key: 'on')"
        )
    if isinstance(value, float):
        return (
            f"got the number {value!r} where PVE takes text: YAML reads an unquoted 1.10 as the number 1.1; "
            "quote the text (key: '1.10')"
        )
    return None


def wire(value: object) -> str:
    """A declared scalar as PVE's form encoding spells it: booleans as 1/0, numbers plain.

    Raises TypeError for a list, a dict or None: PVE config values are scalars.
    """
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, str):
        return value
    raise TypeError(f"expected a string, number or boolean, got {type(value).__name__}")


def pairs(value: str, default_key: str | None = None) -> list[tuple[str, str]]:
    """``'a=1,b=2'`` as ``[('a', '1'), ('b', '2')]``; a bare item is ``default_key``'s value.

    Raises ValueError for a bare item when the format has no default key, or a second bare
    item, or an empty key — PVE's ``parse_property_string`` rejects each.
    """
    out: list[tuple[str, str]] = []
    bare_seen = False
    for raw in value.split(","):
        part = raw.strip()
        if not part:
            continue
        key, eq, val = part.partition("=")
        if not eq:
            if default_key is None:
                raise ValueError(f"{part!r} has no '=' and this property string has no default key")
            if bare_seen:
                raise ValueError(f"{part!r}: only one value may omit its key ({default_key})")
            bare_seen = True
            out.append((default_key, part))
            continue
        key = key.strip()
        if not key:
            raise ValueError(f"{part!r} has an empty key")
        out.append((key, val.strip()))
    seen: set[str] = set()
    for key, _ in out:
        if key in seen:
            raise ValueError(f"duplicate key {key!r}")
        seen.add(key)
    return out


def carry(want: Mapping[str, str], live: Mapping[str, str] | None, key: str) -> dict[str, str]:
    """``want`` plus ``live``'s ``key`` when ``want`` names none: a sub-key PVE generated for the
    guest (a NIC's MAC, ``smbios1``'s uuid) is the guest's, and a write that leaves it out makes PVE
    draw a new one (pve-container ``parse_lxc_network``, qemu-server ``parse_net`` and
    ``create_vm``'s smbios1 uuid)."""
    out = dict(want)
    if live is not None and key not in out and live.get(key):
        out[key] = live[key]
    return out


def canonical_option(key: str, value: str) -> str:
    """One option value in its comparable spelling.

    Flags as 1/0; ``mountoptions`` as a sorted set; MACs upper-cased (pve-common ``PVE::Tools``
    prints generated MACs upper-case and PVE compares them case-insensitively; ``hwaddr`` of a
    container NIC, ``macaddr`` of a VM NIC).
    """
    if key in FLAG_KEYS:
        try:
            return flag(value)
        except ValueError:
            return value
    if key in SET_KEYS:
        return ";".join(sorted({part.strip() for part in value.split(";") if part.strip()}))
    if key in ("hwaddr", "macaddr"):
        return value.upper()
    return value


def option_map(value: str, family: str, default_key: str | None = None) -> dict[str, str]:
    """A property string as ``{key: canonical value}`` with ``family``'s defaults dropped."""
    defaults = FAMILY_DEFAULTS.get(family, {})
    out: dict[str, str] = {}
    for key, raw in pairs(value, default_key):
        canonical = canonical_option(key, raw)
        if defaults.get(key) == canonical:
            continue
        out[key] = canonical
    return out


def sorted_form(mapping: Mapping[str, str]) -> str:
    """An order-free spelling of a map, for comparing and for naming a value in a message."""
    return ",".join(f"{key}={value}" for key, value in sorted(mapping.items()))


def print_pairs(mapping: Mapping[str, str], lead: Iterable[str] = ()) -> str:
    """A map back to a property string, ``lead`` keys first (PVE wants ``name=`` first on a NIC)."""
    lead = [key for key in lead if key in mapping]
    rest = [key for key in mapping if key not in lead]
    return ",".join(f"{key}={mapping[key]}" for key in [*lead, *rest])


def pve_order(keys: Iterable[str], family: str) -> list[str]:
    """``keys`` in the order PVE prints them in ``family``'s property string (see ``PRINT_LEAD``)."""
    keys = list(keys)
    lead = [key for key in PRINT_LEAD.get(family, ()) if key in keys]
    return lead + sorted(key for key in keys if key not in lead)


def _print_ordered(mapping: Mapping[str, str], family: str, default_key: str | None) -> str:
    # The volume is printed bare, as PVE prints it and as operators write it.
    return ",".join(
        mapping[key] if key == default_key == "volume" else f"{key}={mapping[key]}"
        for key in pve_order(mapping, family)
    )


def changed_options(
    old: str | None, new: str | None, family: str, default_key: str | None = None
) -> tuple[str | None, str | None]:
    """What a plan shows for one property-string key: ``(old, new)`` holding only the sub-keys whose
    values differ, each side a property string in PVE's print order (``tag=42`` → ``tag=43``).

    ``old`` is the live value, ``new`` the value to write (None: the key is absent on that side,
    shown whole on the other; ``''`` on the new side: the key is cleared). Values compare in their
    canonical spelling (``canonical_option``); a sub-key missing on one side counts as the family's
    default there (``FAMILY_DEFAULTS``), shown as that default, or is left out of that side when the
    family has none. A value that does not parse as a property string is shown as it is.
    """
    try:
        have = dict(pairs(old, default_key)) if old is not None else None
        want = dict(pairs(new, default_key)) if new else None
    except ValueError:
        return old, new
    if have is None or want is None:
        shown_old = None if have is None else _print_ordered(have, family, default_key)
        return shown_old, new if want is None else _print_ordered(want, family, default_key)
    defaults = FAMILY_DEFAULTS.get(family, {})
    old_side: dict[str, str] = {}
    new_side: dict[str, str] = {}
    for key in {*have, *want}:
        was = have.get(key, defaults.get(key))
        wants = want.get(key, defaults.get(key))
        same = (
            was is not None
            and wants is not None
            and canonical_option(key, was) == canonical_option(key, wants)
        )
        if same or (was is None and wants is None):
            continue
        if was is not None:
            old_side[key] = was
        if wants is not None:
            new_side[key] = wants
    return _print_ordered(old_side, family, default_key), _print_ordered(new_side, family, default_key)
