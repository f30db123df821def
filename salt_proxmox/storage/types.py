"""Each storage type PVE 8 and 9 ship, as pve-storage's plugins define it.

Source: pve-storage 9.1.7 (master) and ``stable-8`` (PVE 8), ``src/PVE/Storage/<X>Plugin.pm``:

- ``options()``: the options a type takes. ``{ optional => 1 }`` may be left out; ``{ fixed => 1 }``
  is required and fixed after create; ``{ optional => 1, fixed => 1 }`` optional and fixed; ``{}``
  (ESXi's ``server``, ``username``) required and changeable. pve-common ``SectionConfig.pm``
  ``check_config`` refuses a fixed option on update: ``can't change value of fixed parameter
  '<key>'``, and ``API2/Storage/Config.pm`` ``update`` refuses deleting one: ``unable to delete fixed
  option '<key>'`` (a required one: ``unable to delete required option '<key>'``);
- ``plugindata()``: ``content`` (the types a storage takes, and the default PVE writes when none is
  declared), ``sensitive-properties`` (``Plugin.pm`` ``sensitive_properties``; a plugin without the
  key gets ``encryption-key keyring master-pubkey password``). The API's ``create``/``update`` take
  them out of the form (pve-common ``Tools.pm`` ``extract_sensitive_params``) into files under
  ``/etc/pve/priv``: ``GET /storage`` never shows them;
- ``Plugin.pm`` ``@SHARED_STORAGE``: types ``parse_config`` marks ``shared`` whatever is written
  (``salt_proxmox.pve.facts.SHARED_TYPES``); a type without ``shared`` in ``options()`` and not
  among them is always local.

``nfs``, ``cifs`` and ``cephfs`` declare ``path => { fixed => 1 }`` but fill it in themselves
(``NFSPlugin.pm``, ``CIFSPlugin.pm``, ``CephFSPlugin.pm`` ``check_config``: ``/mnt/pve/<id>`` at
create when none is given), so here it is optional and fixed (``path^``).

``TYPES`` notation, one token per option: ``name`` optional, ``name!`` required and fixed,
``name^`` optional and fixed, ``name*`` required and changeable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from salt_proxmox.pve.facts import SHARED_TYPES
from salt_proxmox.simple.fields import Field
from salt_proxmox.wire.propstring import flag

#: Every plugin without ``sensitive-properties`` (``Plugin.pm`` ``sensitive_properties``).
LEGACY_SENSITIVE = frozenset({"encryption-key", "keyring", "master-pubkey", "password"})


@dataclass(frozen=True)
class Option:
    """One option of a type: ``required`` (``options()`` without ``optional``), ``fixed``."""

    required: bool = False
    fixed: bool = False


@dataclass(frozen=True)
class StorageType:
    """One storage type: its ``options`` (PVE 9), ``content`` (the types it takes, ``plugindata``
    ``content[0]``), ``sensitive`` options, whether ``shared`` is its own to declare, and
    ``pve8``: ``(options PVE 9 added, options PVE 8 had besides)`` (``stable-8``); ``source``: its
    plugin file."""

    name: str
    options: Mapping[str, Option]
    content: frozenset[str]
    sensitive: frozenset[str]
    source: str
    pve8: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())

    @property
    def always_shared(self) -> bool:
        """``@SHARED_STORAGE``: PVE marks it shared whatever is declared."""
        return self.name in SHARED_TYPES

    def options_on(self, major: int) -> dict[str, Option]:
        """The options this type takes on PVE ``major`` (8 or 9)."""
        if major >= 9:
            return dict(self.options)
        added, removed = self.pve8
        found = {key: option for key, option in self.options.items() if key not in added}
        found.update({key: Option() for key in removed})
        return found


def _options(tokens: str) -> dict[str, Option]:
    found = {}
    for token in tokens.split():
        name = token.rstrip("!^*")
        found[name] = Option(required=token[-1] in "!*", fixed=token[-1] in "!^")
    return found


def _type(name, source, options, content, sensitive=LEGACY_SENSITIVE, pve8=((), ())):
    return StorageType(
        name,
        _options(options),
        frozenset(content.split()),
        frozenset(sensitive),
        f"pve-storage src/PVE/Storage/{source} options(), plugindata()",
        (frozenset(pve8[0]), frozenset(pve8[1])),
    )


_FILE_CONTENT = "images rootdir vztmpl iso backup snippets import"
_DIRS = "mkdir create-base-path create-subdirs"
#: PVE 9 added ``snapshot-as-volume-chain`` and dropped ``maxfiles`` (``stable-8`` has it, no longer
#: ``snapshot-as-volume-chain``) on the file storages.
_CHAIN = (("snapshot-as-volume-chain",), ("maxfiles",))

TYPES: Mapping[str, StorageType] = {
    kind.name: kind
    for kind in (
        _type(
            "dir",
            "DirPlugin.pm",
            f"path! content-dirs nodes shared disable prune-backups max-protected-backups content format "
            f"{_DIRS} "
            "is_mountpoint bwlimit preallocation snapshot-as-volume-chain^",
            f"{_FILE_CONTENT} none",
            (),
            _CHAIN,
        ),
        _type(
            "nfs",
            "NFSPlugin.pm",
            "path^ content-dirs server! export! nodes disable prune-backups max-protected-backups options "
            "content "
            f"format {_DIRS} bwlimit preallocation snapshot-as-volume-chain^",
            _FILE_CONTENT,
            (),
            _CHAIN,
        ),
        _type(
            "cifs",
            "CIFSPlugin.pm",
            "path^ content-dirs server! share! subdir nodes disable prune-backups max-protected-backups "
            "content "
            f"format username password domain smbversion {_DIRS} bwlimit preallocation options "
            "snapshot-as-volume-chain^",
            _FILE_CONTENT,
            ("password",),
            _CHAIN,
        ),
        _type(
            "lvm",
            "LVMPlugin.pm",
            "vgname! nodes shared disable saferemove saferemove-stepsize saferemove_throughput content base^ "
            "tagged_only bwlimit snapshot-as-volume-chain",
            "images rootdir",
            (),
            (("saferemove-stepsize", "snapshot-as-volume-chain"), ()),
        ),
        _type(
            "lvmthin",
            "LvmThinPlugin.pm",
            "thinpool! vgname! nodes disable content bwlimit",
            "images rootdir",
            (),
        ),
        _type(
            "zfspool",
            "ZFSPoolPlugin.pm",
            "pool! blocksize sparse nodes disable content bwlimit mountpoint",
            "images rootdir",
            (),
        ),
        _type(
            "rbd",
            "RBDPlugin.pm",
            "nodes disable monhost pool data-pool namespace username content krbd keyring bwlimit",
            "images rootdir",
            ("keyring",),
        ),
        _type(
            "cephfs",
            "CephFSPlugin.pm",
            "path^ content-dirs monhost nodes subdir disable options username content format "
            f"{_DIRS} fuse bwlimit keyring prune-backups max-protected-backups fs-name",
            "vztmpl iso backup snippets import",
            ("keyring",),
            ((), ("maxfiles",)),
        ),
        _type(
            "iscsi", "ISCSIPlugin.pm", "portal! iscsi_target! nodes disable content bwlimit", "images none"
        ),
        _type(
            "iscsidirect",
            "ISCSIDirectPlugin.pm",
            "portal! iscsi_target! nodes disable content bwlimit",
            "images none",
        ),
        _type(
            "btrfs",
            "BTRFSPlugin.pm",
            "path! nodes shared disable prune-backups max-protected-backups content format is_mountpoint "
            "nocow "
            f"{_DIRS} preallocation",
            f"{_FILE_CONTENT} none",
            (),
            ((), ("maxfiles",)),
        ),
        _type(
            "pbs",
            "PBSPlugin.pm",
            "server! datastore! namespace port nodes disable content username password encryption-key "
            "master-pubkey prune-backups max-protected-backups fingerprint",
            "backup none",
            ("encryption-key", "master-pubkey", "password"),
            ((), ("maxfiles",)),
        ),
        _type(
            "esxi",
            "ESXiPlugin.pm",
            "nodes shared disable content server* username* password skip-cert-verification port",
            "import",
            ("password",),
        ),
    )
}

#: Options a declaration spells otherwise than PVE, ``{declared: PVE's}``: the iSCSI plugins' ``target``
#: (``ISCSIPlugin.pm`` ``properties()``: the iSCSI target's IQN) is ``iscsi_target``, since every state's
#: own ``target`` argument names the cluster (``proxmox:targets``). The tables above and the ownership
#: row speak the declared spelling; only the wire (create, update, the ``GET /storage`` row) speaks PVE's.
WIRE_NAMES: Mapping[str, str] = {"iscsi_target": "target"}
#: ``{PVE's: declared}``, the way back from a ``GET /storage`` row.
DECLARED_NAMES: Mapping[str, str] = {wire: declared for declared, wire in WIRE_NAMES.items()}
#: RFC 3720 section 3.2.6.3 iSCSI name forms (``iqn.``, ``eui.``, ``naa.``): a state's ``target``
#: spelt like one was meant as the iSCSI target.
ISCSI_NAME = re.compile(r"^(?:iqn\.|eui\.|naa\.)", re.IGNORECASE)

#: Every option of any type (the declaration's unknown-key check).
ALL_OPTIONS = frozenset(key for kind in TYPES.values() for key in kind.options) | {"maxfiles"}


def prune_backups(text: str) -> str:
    """``prune-backups`` (pve-common ``JSONSchema.pm`` ``prune-backups`` format: ``keep-all``,
    ``keep-last``, ``keep-hourly``, ``keep-daily``, ``keep-weekly``, ``keep-monthly``,
    ``keep-yearly``) in one spelling: sub-keys sorted, integers without leading zeros, ``keep-all``
    as 0/1. Raises ValueError for another sub-key or value."""
    parts = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or key not in _PRUNE:
            raise ValueError(f"{item!r} is not one of {', '.join(_PRUNE)}=<value>")
        if key == "keep-all":
            parts[key] = str(int(flag(value.strip())))
        elif re.fullmatch(r"\d+", value.strip()):
            parts[key] = str(int(value))
        else:
            raise ValueError(f"{key}: expected a non-negative integer, got {value!r}")
    return ",".join(f"{key}={parts[key]}" for key in sorted(parts))


_PRUNE = ("keep-all", "keep-last", "keep-hourly", "keep-daily", "keep-weekly", "keep-monthly", "keep-yearly")

#: How each option is compared (``salt_proxmox.simple.fields.Field``): booleans as 0/1 (pve-common
#: ``parse_boolean``), ``content`` and ``nodes`` as sets (``Plugin.pm`` ``decode_value`` makes hashes
#: of them, ``encode_value`` joins their keys in hash order), ``prune-backups`` normalised; the
#: types' ``properties()`` and ``Plugin.pm`` ``$defaultData`` give the kinds. Text otherwise.
FIELDS: Mapping[str, Field] = {
    **{key: Field() for key in ALL_OPTIONS},
    **{
        key: Field("flag")
        for key in [
            "disable",
            "shared",
            "krbd",
            "sparse",
            "fuse",
            "nocow",
            "mkdir",
            "create-base-path",
            "create-subdirs",
            "saferemove",
            "tagged_only",
            "skip-cert-verification",
            "snapshot-as-volume-chain",
            "nowritecache",
        ]
    },
    "content": Field("set", separator=","),
    "nodes": Field("set", separator=","),
    "port": Field("integer", minimum=1, maximum=65535),
    "max-protected-backups": Field("integer", minimum=-1),
    "maxfiles": Field("integer", minimum=0),
    "saferemove-stepsize": Field("choice", choices=("1", "2", "4", "8", "16", "32")),
    "preallocation": Field("choice", choices=("off", "metadata", "falloc", "full")),
    "smbversion": Field("choice", choices=("default", "2.0", "2.1", "3", "3.0", "3.11")),
    "prune-backups": Field(normal=prune_backups),
}
