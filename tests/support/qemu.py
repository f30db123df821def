"""A FakePve whose QEMU guests answer config reads, writes and disk resizes as qemu-server does.

fakepve 0.5.0 models VM create, clone, template, pending changes and power state, but differs from
PVE where the VM family relies on it. ``QemuPve`` closes those gaps, following qemu-server 9.2
(``src/PVE/API2/Qemu.pm``) and pve-guest-common (``src/PVE/AbstractConfig.pm``,
``src/PVE/GuestHelpers.pm``):

- ``PUT /nodes/{node}/qemu/{vmid}/resize`` (``resize_vm``) is stateful. fakepve answers it from its
  generic handler and changes nothing. Here, as on PVE 8 and 9, it starts a ``resize`` task and
  returns its UPID; ``skiplock`` from anyone but root@pam is a 400 before the task. The task's
  worker does everything else under the config lock, so each refusal is the task's error: a stale
  ``digest`` (``checksum mismatch (file change by other user?)``), a config ``lock`` (``VM is locked
  (<lock>)``), a missing disk (``disk 'scsi1' does not exist``), a CD-ROM (``you can't resize a
  cdrom``), no Datastore.AllocateSpace on the volume's storage, and a shrink (``shrinking disks is
  not supported``). ``+NG`` adds to the volume's size, ``NG`` sets it; the same size changes nothing.
  The grown size is written into the drive's ``size=`` (pve-common ``format_size``: the largest unit
  that divides it) and into the storage's volume. The schema asks for VM.Config.Disk on
  ``/vms/{vmid}``.
- ``GET …/config`` (``vm_config``) returns the config with the pending changes applied (pending
  values replace current ones, pending deletes remove keys) unless ``current=1``, as
  ``AbstractConfig::load_current_config`` builds it; ``snapshot=<name>`` reads a snapshot's config;
  ``snapshot`` and ``current`` together are PVE's 400. fakepve always returns the current values.
- ``cipassword`` is never shown: ``vm_config`` and ``vm_pending`` print ``**********`` in its place
  (the pending value as ``********** ``, with a space, as PVE does). fakepve returns the password.
  ``update_vm_api`` stores a new ``cipassword`` straight in the config, never as a pending change,
  hashed as ``PVE::Tools::encrypt_pw`` would (``$5$<salt>$…``) unless it is already a crypt hash or
  the guest runs Windows (``ostype`` ``w*``). ``create_vm`` writes its form as sent (``$conf =
  $param``, then ``write_config``): a ``cipassword`` given to the create stays in clear, as fakepve
  keeps it too.
- ``GET …/pending`` lists the ``digest`` row too: ``vm_pending`` passes ``load_config``'s hash,
  digest included, to pve-guest-common ``config_with_pending_array``. fakepve leaves it out.
- A config write (``PUT`` and ``POST …/config``) stores what PVE stores: integer, number and boolean
  keys as JSON numbers (``parse_vm_config`` runs ``check_type``; fakepve keeps the form's strings, so
  ``cores`` read back as ``"2"``); a ``netN`` without a MAC gets a generated one (``update_vm_api``
  runs ``parse_net``, which fills ``macaddr``, then ``print_net``: ``model=MAC`` first, the rest in
  key order; fakepve stores the value as sent); ``tags`` through ``get_unique_tags`` (split, sorted
  and lower-cased unless ``datacenter.cfg``'s ``tag-style`` says otherwise, duplicates dropped;
  fakepve stores them as sent); ``vmgenid: 1`` becomes a new UUID.

- A cloud-init drive (``ideN: <storage>:cloudinit``) is allocated as ``vm-<vmid>-cloudinit`` (on a
  storage with a path ``<vmid>/vm-<vmid>-cloudinit.qcow2``), 4 MiB, ``media=cdrom``: ``create_disks``
  names it so. fakepve allocates it as the next ``vm-<vmid>-disk-N``.
- A config write allocates what it declares, as ``update_vm_api`` runs ``create_disks`` on the drives
  it is given: ``storage:GiB`` becomes a new volume with its ``size=``, ``storage:cloudinit`` the
  cloud-init drive, an existing volume or ISO gets its ``size=``. fakepve stores the value as sent
  (``local-lvm:20`` stays that text). A write that fails after that frees what it allocated.
- On a running VM a write takes effect at once where qemu-server's ``vmconfig_hotplug_pending``
  applies it, and waits in pending otherwise (fakepve applies only ``name``, ``description``,
  ``onboot``, ``tags``, ``protection``, ``startup``, ``agent`` and a CD-ROM swap live, whatever the
  VM's ``hotplug``). Live: ``$fast_plug_option`` keys (those, ``shares``, ``hookscript``, the
  cloud-init keys ``ciuser``, ``cipassword``, ``citype``, ``ciupgrade``, ``cicustom``, ``sshkeys``,
  ``nameserver``, ``searchdomain``, ``ipconfigN``), ``agent``, ``cpuunits``, ``cpulimit``; ``balloon``
  unless it turns ballooning on or off; ``hotplug`` unless the old or new value names ``cpu`` or
  ``memory``; with the VM's ``hotplug`` (default ``network,disk,usb``): ``netN`` under ``network``
  (without it only a change of ``bridge``, ``tag``, ``trunks``, ``firewall``, ``rate`` or
  ``link_down`` of an existing NIC: ``vmconfig_update_net``), a ``scsiN``/``virtioN`` disk under
  ``disk`` (never ``ideN``, ``sataN``, ``efidisk0``, ``tpmstate0``), a CD-ROM or cloud-init drive
  always, ``usbN`` under ``usb`` for an ``ostype`` ``l26`` or Windows after 7 on a machine version 7.1 or
  newer (``$is_usb_hotplug_supported``), ``vcpus`` under ``cpu``, ``memory`` under ``memory``. A delete
  follows the same rules.
- A hot-plug can fail as on PVE: for a vmid in ``hotplug_errors`` (vmid -> {key: error}) a running VM's
  write of ``key`` that ``vmconfig_hotplug_pending`` would apply stays in ``[PENDING]`` (its
  ``$add_error``: ``hotplug problem - <error>``) while the rest is applied, and the write then fails as
  ``update_vm_api`` fails it, after every value was written pending (``write_config`` per key) and
  what it allocated kept: ``raise_param_exc($errors)``, a 400 ``Parameter verification failed.`` with
  the key's error for the ``PUT``. The ``POST …/config`` (``update_vm_async``) is a ``qmconfig``
  task whose error is the exception as pve-common ``RESTEnvironment.pm`` ``fork_worker`` prints it
  (``Exception.pm`` ``stringify``: ``400 Parameter verification failed. net1: hotplug problem - …``).
  fakepve hot-plugs without failing, and its task error keeps the message alone. Both still check
  the ``digest`` inside the write where PVE's ``POST`` checks it before it forks the task
  (``$load_and_check_config->(0)``): either way nothing is written.
- A clone gets its own cloud-init drive: ``clone_vm`` copies a CD-ROM's value but full-clones a
  cloud-init drive (``drive_is_cdrom($drive, 1)`` excludes it), so the clone's ``ideN`` names
  ``vm-<newid>-cloudinit``, on the clone's ``storage`` when one is given (``clone_disk``:
  ``$storage || $src_storeid``; with a ``.<format>`` suffix only on a storage with a path). fakepve
  copies the source's volume id, and destroying the clone would free the template's drive; it does
  move the disks to ``storage``.
- A clone gets its source's firewall: ``clone_vm`` calls ``PVE::Firewall::clone_vmfw_conf($vmid,
  $newid)`` (pve-firewall ``src/PVE/Firewall/Helpers.pm``), which removes any ``<newid>.fw`` and copies
  ``<vmid>.fw`` to it, before the clone's worker runs: options, aliases, IP sets and rules alike.
  fakepve's clone starts the new VM with no firewall.

- An HA-managed guest's start or shutdown only asks the HA manager: qemu-server ``vm_start``
  (``PVE::HA::Config::vm_is_ha_managed``) runs ``ha-manager set vm:<vmid> --state started`` in an
  ``hastart`` task, ``vm_shutdown`` ``ha-manager crm-command stop vm:<vmid> <timeout>`` in an
  ``hastop`` task; each ends OK at once, and the CRM (pve-ha-manager ``PVE::HA::Manager``) acts in a
  later round, or not at all (a node in maintenance, a service in ``error``); pve-container
  ``API2/LXC/Status.pm`` ``vm_start``/``vm_shutdown`` do the same for ``ct:<vmid>``. fakepve
  (time_scale 0) changes the guest's power inside the task. Here a vmid in ``ha_holds`` (a VM or a
  container) keeps its power: its HA request is recorded (``ha_state``, shown as
  ``status/current``'s ``ha.state``) and the task ends OK. A vmid in ``ha_rounds`` (vmid -> N)
  has its request queued by the task and carried out by the N-th ``status/current`` read after
  it, as the CRM and the LRM carry it out some rounds later: a start applies the pending changes
  and runs the guest, a stop stops it (the agents' shutdown, ``Resources/PVEVM.pm``/``PVECT.pm``
  ``shutdown``, is not modelled further: the guest stops within the timeout), and ``ha.state``
  becomes ``started``/``stopped``.

- An EFI disk is made as qemu-server 9.0.27+ / 8.4.6+ makes it: ``OVMF.pm`` ``create_efidisk`` copies
  a vars template that holds the Microsoft UEFI CA 2023 when ``pre-enrolled-keys`` is on, and marks
  the new ``efidisk0`` ``ms-cert=2023k``; boolean drive options are printed ``1``/``0``
  (``parse_property_string`` reads them with ``parse_boolean``, ``print_drive`` prints the number).
  A write of ``efidisk0`` on its volume whose ``ms-cert`` turns to ``2023*`` enrolls the keys
  (``OVMF.pm`` ``drive_change``: ``2023k`` with ``pre-enrolled-keys``, else the marker is dropped:
  ``should_enroll_ms_2023_cert``), and a ``tpmstate0`` write on its volume with another ``version``
  fails ``cannot change TPM state version after creation`` (``API2/Qemu.pm``
  ``prohibit_tpm_version_change``). fakepve makes the EFI disk without a marker and takes both.

- A config write asks for the privileges ``update_vm_api`` asks for that fakepve does not
  (``tests.support.qemu_perms``): VM.Config.Cloudinit or VM.Config.Network for the cloud-init keys,
  and ``$check_drive_perms`` on each drive's old and new value (a cloud-init drive VM.Config.Cloudinit
  and VM.Config.CDROM, with or without ``media=cdrom``).

- ``startup`` set or deleted (config write or create) needs Sys.Modify on ``/`` from anyone but
  root@pam (``API2/Qemu.pm`` ``$check_vm_modify_config_perm``: "special case for startup since it
  changes host behaviour"). fakepve asks only for VM.Config.Options.

- A Windows guest's ``machine`` is pinned at create (``Machine.pm`` ``check_and_pin_machine_string``:
  absent, ``pc``, ``q35`` or ``virt`` becomes ``pc-i440fx-X.Y+pveN``, ``pc-q35-…``, ``virt-…``;
  ``pin_windows_machine``). fakepve stores ``machine`` as sent.

- ``boot`` as ``update_vm_api`` changes it by itself when it has an ``order``: a deleted device is
  dropped from it, a new CD-ROM appended; of the orders PVE's hash iteration may take, the fake takes
  the one where the append overwrites a ``boot`` written beside it (``_boot_order``). fakepve leaves
  ``boot`` alone.

- A paused VM (``qmpstatus`` ``paused``, ``prelaunch`` or ``suspended``: ``vm_is_paused($vmid, 1)``)
  is not shut down: ``vm_shutdown`` dies ``VM is paused - cannot shutdown`` (500, before the task
  and before any HA hand-over) unless ``forceStop`` is given, and then stops it hard in its task
  (warning ``VM is paused - stop instead of shutdown``); ``vm_reboot`` dies the same. A shutdown
  without ``timeout`` waits the VM's ``startup: down=`` (``_do_vm_stop``), then 60 s. fakepve shuts a
  paused VM down and always waits its own default.

- A VM's reboot is asynchronous: ``vm_reboot`` (``QemuServer.pm``) writes a reboot request and shuts
  QEMU down, and its ``qmreboot`` task ends once QEMU has exited; ``qmeventd`` then sees the stop
  event and starts the VM again (``qm cleanup`` → ``qm start``), which applies its pending changes.
  For a vmid in ``qmeventd_rounds`` (vmid -> N) the task ends with the VM stopped and the N-th
  ``status/current`` read after it finds it started. fakepve restarts it inside the task.

- A clone (``clone_vm``) to another node of a VM with a volume (a CD-ROM's ISO included) on storage
  that is not shared fails ``can't clone VM to node '<node>' (VM uses local storage)``
  (``$check_storage_access_clone``), and a linked clone of a disk on storage whose plugin cannot
  clone (pve-storage ``volume_has_feature``: ``lvm``, ``iscsi``, ``iscsidirect``) fails ``Linked
  clone feature is not supported for '<volid>' (<key>)``, both before the task, and so does a linked
  clone of a disk that is not a base volume (``parse_volname``'s ``$isBase``: the volume's own name,
  the last part of the volname, is ``base-…``; ``BTRFSPlugin`` also clones a raw one). fakepve checks
  neither the target nor the storage, and takes any volume id with ``base-`` in it for a base
  volume, so it clones a linked clone's own disk ``<M>/base-M-disk-0.qcow2/<N>/vm-N-disk-0.qcow2``.
  Left as fakepve has them: it also refuses a linked clone of a ``tpmstate0`` that is no base volume
  (PVE copies it) and of a btrfs raw volume that is none (PVE clones it).

Left as fakepve has them: ``memory`` reads back as a string (PVE 9 spells it as a property string,
``[current=]<MiB>``); a create lower-cases and sorts ``tags`` whatever the tag style.

- A NIC is plugged when its guest starts (``qmstart``, a container's ``vzstart``): its ``bridge``
  must be live on the node, a bridge of the node's RUNNING ``/etc/network/interfaces`` (not one only
  staged in ``interfaces.new``) or a vnet of the RUNNING SDN configuration (pve-network ``Zones.pm``
  ``tap_plug``/``veth_create`` read ``get_vnet(<vnet>, 1)``), else the start task fails ``bridge
  '<br>' does not exist`` (pve-common ``Network.pm`` ``read_bridge_mtu``); a ``tag`` or ``trunks`` on
  a vnet that is not VLAN-aware fails it ``vm vlans are not allowed on vnet <vnet>`` (pve-network
  ``Zones/Plugin.pm`` ``tap_plug``); ``trunks`` on a bridge without ``bridge_vlan_aware`` fails it
  ``vlan aware feature need to be enabled to use trunks`` (pve-common ``Network.pm`` ``tap_plug``); a
  vnet whose zone (in ``zones.cfg``, pending: ``get_plugin_config`` reads ``config()``) lists ``nodes``
  without the guest's fails it ``vnet <vnet> is not allowed on this node`` (``Zones.pm`` ``tap_plug``).
  fakepve starts any guest.
- A VM config write or create checks each NIC it names (the old value too for a changed or
  deleted one) as qemu-server ``check_bridge_access`` does (pve-guest-common ``check_vnet_access``):
  SDN.Use on ``/sdn/zones/<zone>/<bridge>`` (``localnetwork`` unless the bridge is a vnet of the
  pending SDN configuration), or on ``…/<bridge>/<tag>`` with a tag; 403 ``Permission check failed
  (<path>, SDN.Use)`` otherwise. fakepve checks nothing.
"""

from __future__ import annotations

import copy
import hashlib
import re
import secrets
import uuid

from fakepve.lxc import SIZE_UNITS, format_size
from fakepve.model import PveError, TaskError
from fakepve.qemu import (
    NET_MODELS,
    NEW_DISK,
    QEMU_VERSION,
    is_cdrom,
    join_drive,
    split_drive,
    volume_ref,
    with_mac,
)
from fakepve.routing import die, ok, param_error, split_list
from fakepve.schema import load as load_schema
from fakepve.schema import validate
from fakepve.server import USER, params
from fakepve.storage import _is_file

from tests.support.network import NetworkPve
from tests.support.qemu_perms import check_root_only, check_update_perms

CONFIG_PATH = "/nodes/{node}/qemu/{vmid}/config"
#: What ``vm_config`` and ``vm_pending`` print in place of a ``cipassword`` (the pending one ends in a space).
MASK = "**********"
#: A value ``update_vm_api`` keeps as it is: already a crypt(3) hash.
CRYPTED = re.compile(r"^\$(?:[156]|2[ay])(\$.+){2}")
#: ``resize_vm``'s size: an optional ``+``, a number, an optional unit.
SIZE = re.compile(r"^(\+)?(\d+(?:\.\d+)?)([KMGT])?$")
#: pve-storage ``Plugin.pm`` ``@SHARED_STORAGE``: always shared.
SHARED_TYPES = ("iscsi", "nfs", "cifs", "rbd", "cephfs", "iscsidirect", "zfs", "drbd", "pbs")
#: ``vm_is_paused($vmid, 1)``: the QMP states of a paused VM.
PAUSED = ("paused", "prelaunch", "suspended")
#: A drive key (qemu-server ``Drive.pm`` ``valid_drive_names``).
DRIVE = re.compile(r"(?:ide|sata|scsi|virtio)\d+|efidisk0|tpmstate0")
#: qemu-server ``$fast_plug_option`` (with the ``$confdesc_cloudinit`` keys): applied at once on a running VM.
FAST_PLUG = frozenset(
    {
        "description", "hookscript", "lock", "migrate_downtime", "migrate_speed", "name", "onboot",
        "protection", "shares", "startup", "tags", "vmstatestorage", "cicustom", "cipassword",
        "citype", "ciupgrade", "ciuser", "nameserver", "searchdomain", "sshkeys",
    }
)  # fmt: skip
#: The options of a NIC whose change ``vmconfig_update_net`` cannot make without unplugging it.
NET_REPLUG = ("model", "macaddr", "queues", "mtu")
#: Boolean options of a drive (``Drive.pm``), printed 1/0 by ``print_drive``.
BOOLEAN_DRIVE_OPTIONS = frozenset(
    {"backup", "replicate", "snapshot", "iothread", "ro", "ssd", "shared", "scsiblock", "detect_zeroes",
     "pre-enrolled-keys"}
)  # fmt: skip


def parse_boolean(value: object) -> str:
    """pve-common ``JSONSchema.pm`` ``parse_boolean`` as ``print_drive`` writes it: ``1`` for
    1/on/yes/true, ``0`` for 0/off/no/false (any case); anything else as it is."""
    text = str(value)
    if re.fullmatch(r"1|on|yes|true", text, re.IGNORECASE):
        return "1"
    if re.fullmatch(r"0|off|no|false", text, re.IGNORECASE):
        return "0"
    return text


#: A cloud-init drive's volume name (``drive_is_cloudinit``): ``[<vmid>/]vm-<vmid>-cloudinit[.fmt]``.
CLOUDINIT = re.compile(r"(\d+/)?vm-(\d+)-cloudinit(\.\w+)?")


def linked_clones(storage_type: str, volname: str) -> bool:
    """pve-storage ``volume_has_feature($scfg, 'clone', …, $volname)`` without a snapshot: ``LVMPlugin``
    (its ``clone`` table commented out), ``ISCSIPlugin`` and ``ISCSIDirectPlugin`` (``copy`` only)
    never; every other plugin's ``clone`` table has ``base`` (``$isBase`` of ``parse_volname``: the
    volume's own name, after the last ``/``, starts ``base-``, ``basevol-`` for a ZFS subvolume), and
    ``BTRFSPlugin``'s also ``current => { raw => 1 }``."""
    if storage_type in ("lvm", "iscsi", "iscsidirect"):
        return False
    if volname.rpartition("/")[2].startswith(("base-", "basevol-")):
        return True
    return storage_type == "btrfs" and volname.endswith(".raw")


def unique_tags(text: object, style: dict) -> str:
    """pve-guest-common ``GuestHelpers::get_unique_tags``: tags split on ``;``, ``,`` or space,
    lower-cased unless ``case-sensitive``, sorted unless ``ordering`` is ``config``, duplicates
    dropped, joined with ``;``."""
    tags = split_list(text)
    case_sensitive = bool(style.get("case-sensitive"))
    if style.get("ordering") != "config":
        tags = sorted(tags, key=lambda tag: tag if case_sensitive else tag.lower())
    out: list[str] = []
    for tag in tags:
        tag = tag if case_sensitive else tag.lower()
        if tag not in out:
            out.append(tag)
    return ";".join(out)


def encrypt_pw(password: str) -> str:
    """A stand-in for pve-common ``PVE::Tools::encrypt_pw`` (``crypt`` with a ``$5$`` salt): a value
    of the same shape that does not hold the password."""
    salt = secrets.token_hex(8)
    return f"$5${salt}${hashlib.sha256((salt + password).encode()).hexdigest()}"


def hotplug_features(value: object) -> frozenset[str]:
    """qemu-server ``parse_hotplug_features``: ``1`` (the default) is ``network,disk,usb``, ``0``
    none."""
    text = "1" if value is None else str(value)
    if text == "1":
        return frozenset({"network", "disk", "usb"})
    return frozenset() if text == "0" else frozenset(split_list(text))


def _net_options(value: object) -> dict[str, str]:
    options: dict[str, str] = {}
    for part in str(value or "").split(","):
        key, _, val = part.partition("=")
        if key in NET_MODELS:
            options.update(model=key, macaddr=val)
        elif key:
            options[key] = val
    return options


def usb_hotplug(features: frozenset[str], conf: dict) -> bool:
    """``vmconfig_hotplug_pending``'s ``$is_usb_hotplug_supported``: the ``usb`` feature, a machine
    version of at least 7.1 (an unversioned type runs the fake's QEMU 10), and ``ostype`` ``l26`` or a
    Windows newer than 7 (``windows_version`` > 7)."""
    found = re.search(r"-(\d+)\.(\d+)", str(conf.get("machine") or "").partition(",")[0])
    if "usb" not in features or (found and (int(found.group(1)), int(found.group(2))) < (7, 1)):
        return False
    ostype = str(conf.get("ostype") or "")
    windows = re.fullmatch(r"win(\d+)", ostype)
    return ostype == "l26" or bool(windows and int(windows.group(1)) > 7)


def hotplugs(key: str, old: object, new: object, features: frozenset[str], conf: dict | None = None) -> bool:
    """Whether a running VM takes ``key`` (``old`` → ``new``; ``new`` None: a delete) at once, as
    qemu-server ``vmconfig_hotplug_pending`` decides (``conf``: the config in effect, for ``usbN``);
    False leaves it pending."""
    if key in FAST_PLUG or re.fullmatch(r"ipconfig\d+", key) or key in ("agent", "cpuunits", "cpulimit"):
        return True
    if key == "balloon":
        return (old is None or str(old) != "0") == (new is None or str(new) != "0")
    if key == "hotplug":
        return not re.search(r"cpu|memory", f"{old or ''} {new or ''}")
    if key in ("vcpus", "memory"):
        return {"vcpus": "cpu", "memory": "memory"}[key] in features
    if re.fullmatch(r"usb\d+", key):
        return usb_hotplug(features, conf or {})
    if re.fullmatch(r"net\d+", key):
        if "network" in features:
            return True
        if old is None or new is None:
            return False
        was, will = _net_options(old), _net_options(new)
        return all(was.get(option) == will.get(option) for option in NET_REPLUG)
    if DRIVE.fullmatch(key):
        if key in ("efidisk0", "tpmstate0"):
            return False
        media = [split_drive(value)[1].get("media") for value in (old, new) if value is not None]
        if media and all(kind == "cdrom" for kind in media):
            return True
        return "disk" in features and not re.match(r"(?:ide|sata)\d", key)
    return False


def task_error(exc: PveError) -> str:
    """A ``PVE::Exception`` as a worker's task status: ``stringify`` gives ``<code> <msg>`` (a 500 is
    a plain ``die``: the message alone) then a ``<field>: <reason>`` line per error; ``fork_worker``
    chomps it and turns newlines into spaces."""
    head = exc.message if exc.status == 500 else f"{exc.status} {exc.message}"
    fields = [f"{key}: {reason}" for key, reason in sorted((exc.errors or {}).items())]
    return " ".join([head, *fields])


def pin_windows_machine(config: dict) -> None:
    """qemu-server ``Machine.pm`` ``check_and_pin_machine_string`` at ``create_vm``: a Windows guest
    (``Helpers.pm`` ``windows_version``) whose ``machine`` is absent, ``pc``, ``q35`` or ``virt`` gets
    that type pinned to the latest installed machine version (``windows_get_pinned_machine_version``;
    here the fake's QEMU version with ``+pve1``)."""
    ostype = str(config.get("ostype") or "")
    if not re.fullmatch(r"wxp|w2k3?|w2k8|wvista|win\d+", ostype):
        return
    value = str(config.get("machine") or "")
    kind, _, rest = value.partition(",")
    kind = kind or "pc"
    if kind not in ("pc", "q35", "virt"):
        return
    version = ".".join(QEMU_VERSION.split(".")[:2]) + "+pve1"
    pinned = {"pc": f"pc-i440fx-{version}", "q35": f"pc-q35-{version}", "virt": f"virt-{version}"}[kind]
    config["machine"] = ",".join(part for part in (pinned, rest) if part)


class QemuPve(NetworkPve):
    """NetworkPve whose VMs resize, read and write their config as qemu-server does (see the
    module docstring). ``resized`` lists ``(vmid, disk, size in bytes)`` of every resize that grew a
    volume, oldest first."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.resized: list[tuple[int, str, int]] = []
        #: The ``storage`` of each clone under way, by its new vmid (``_own_cloudinit`` reads it).
        self._clone_storage: dict[int, str] = {}
        #: vmids whose HA requests the HA manager has not carried out (see the module docstring).
        self.ha_holds: set[int] = set()
        #: vmid -> how many ``status/current`` reads pass before the HA manager carries out a request
        #: queued for it (see the module docstring); ``_ha_queue`` holds the request meanwhile.
        self.ha_rounds: dict[int, int] = {}
        self._ha_queue: dict[int, list] = {}
        #: vmid -> {key: error}: on that running VM, the hot-plug of ``key`` fails with ``error``
        #: (see the module docstring).
        self.hotplug_errors: dict[int, dict[str, str]] = {}
        #: vmid -> how many ``status/current`` reads pass before ``qmeventd`` starts a VM again after
        #: its reboot task (see the module docstring); ``_restarts`` counts them down.
        self.qmeventd_rounds: dict[int, int] = {}
        self._restarts: dict[int, int] = {}

    def _ha_round(self, vmid: int) -> None:
        """One CRM round seen by a ``status/current`` read of ``vmid``: a queued request whose
        rounds are over is carried out (the guest started, with its pending changes, or stopped)."""
        queued = self._ha_queue.get(vmid)
        if queued is None:
            return
        queued[2] -= 1
        if queued[2] > 0:
            return
        guest, state, _ = self._ha_queue.pop(vmid)
        if state == "started":
            if guest in self.vms:
                guest.apply_pending()
                guest.qmpstatus = "running"
            else:
                self._apply(guest)
                guest.pid = 4242
            guest.status = "running"
        else:
            guest.status = "stopped"
            if guest in self.vms:
                guest.qmpstatus = "stopped"
            else:
                guest.pid = None
        guest.ha_state = state

    async def _status_current(self, request):
        vmid = int(request.match_info["vmid"])
        self._ha_round(vmid)
        if vmid in self._restarts:
            self._restarts[vmid] -= 1
            if self._restarts[vmid] <= 0:
                del self._restarts[vmid]
                vm = self.vm(vmid)
                vm.apply_pending()  # qmeventd's qm start: the pending changes take effect
                vm.status = vm.qmpstatus = "running"
        return await super()._status_current(request)

    async def _lxc_status_current(self, user, v):
        self._ha_round(int(v["vmid"]))
        return await super()._lxc_status_current(user, v)

    async def _ha_request(self, vm, user, state):
        if vm.vmid in self.ha_rounds:
            return await self._ha_queued(vm, user, state, "VM")
        if vm.vmid not in self.ha_holds:
            return await super()._ha_request(vm, user, state)

        async def body():
            vm.ha_state = state

        verb = "start" if state == "started" else "stop"
        return await self.task(
            vm.node,
            "ha" + verb,
            vm.vmid,
            user,
            body,
            lock=False,
            log=[f"Requesting HA {verb} for VM {vm.vmid}"],
        )

    async def _do_shutdown(self, vm, user, p):
        """``vm_shutdown``: a paused VM (``vm_is_paused($vmid, 1)``) is refused before any HA hand-over,
        or stopped hard with ``forceStop``."""
        if vm.status == "running" and vm.qmpstatus in PAUSED:
            if str(p.get("forceStop", "0")) not in ("1", "true"):
                raise die("VM is paused - cannot shutdown")
            self._check_lock(vm)

            async def body():
                vm.status = vm.qmpstatus = "stopped"
                return "VM is paused - stop instead of shutdown"

            return await self.task(vm.node, "qmshutdown", vm.vmid, user, body, vm=vm)
        return await super()._do_shutdown(vm, user, p)

    async def _do_reboot(self, vm, user, p):
        if vm.status == "running" and vm.qmpstatus in PAUSED:
            raise die("VM is paused - cannot shutdown")  # vm_reboot
        if vm.vmid not in self.qmeventd_rounds:
            return await super()._do_reboot(vm, user, p)
        self._need_running(vm)
        self._check_lock(vm)

        async def body():
            await self._powerdown(vm, p)
            self._restarts[vm.vmid] = self.qmeventd_rounds[vm.vmid]

        return await self.task(vm.node, "qmreboot", vm.vmid, user, body, vm=vm)

    async def _powerdown(self, vm, p):
        """``_do_vm_stop``: without a ``timeout`` a shutdown waits the VM's ``startup: down=``, then 60."""
        if p.get("timeout") is None:
            found = re.search(r"(?:^|,)down=(\d+)", str(vm.config.get("startup") or ""))
            if found and int(found.group(1)):
                p = {**p, "timeout": found.group(1)}
        return await super()._powerdown(vm, p)

    async def _ha_queued(self, guest, user, state, label):
        """An ``hastart``/``hastop`` task that only queues the request (``ha_rounds``)."""

        async def body():
            self._ha_queue[guest.vmid] = [guest, state, self.ha_rounds[guest.vmid]]

        verb = "start" if state == "started" else "stop"
        log = [f"Requesting HA {verb} for {label} {guest.vmid}"]
        return await self.task(guest.node, "ha" + verb, guest.vmid, user, body, lock=False, log=log)

    async def _ct_ha(self, ct, user, state, timeout=None):
        if ct.vmid in self.ha_rounds:
            return await self._ha_queued(ct, user, state, "CT")
        if ct.vmid not in self.ha_holds:
            return await super()._ct_ha(ct, user, state, timeout)

        async def body():
            ct.ha_state = state

        verb = "start" if state == "started" else "stop"
        return await self._ct_task(
            ct, "ha" + verb, user, body, lock=False, log=[f"Requesting HA {verb} for CT {ct.vmid}"]
        )

    # ------------------------------------------------------------------------------------ NICs

    def live_bridge(self, node: str, bridge: str) -> dict | None:
        """What a plug on ``node`` finds for ``bridge``: ``{"vnet": bool, "vlanaware": bool}``, or None
        when it does not exist (see the module docstring)."""
        vnet = self.sdn_running["vnets"].get(bridge)
        if vnet is not None:
            return {"vnet": True, "vlanaware": str(vnet.get("vlanaware", "0")) in ("1", "true")}
        from tests.support.network import read_interfaces

        running = read_interfaces(self.node_network(node)["running"], self.physical)
        if running.get(bridge, {}).get("type") in ("bridge", "OVSBridge"):
            return {"vnet": False, "vlanaware": bool(running[bridge].get("bridge_vlan_aware"))}
        return None

    def plug_nics(self, node: str, config: dict) -> None:
        """A start's plugs of every ``netN`` of ``config``; raises the task's error as PVE's would."""
        for key in sorted(k for k in config if re.fullmatch(r"net\d+", k)):
            options = _net_options(config[key])
            bridge = options.get("bridge")
            if not bridge:
                continue
            found = self.live_bridge(node, bridge)
            if found is None:
                raise TaskError(f"bridge '{bridge}' does not exist")
            if found["vnet"]:
                # Zones.pm tap_plug: the vnet from the running config, its zone from zones.cfg (pending).
                zone = self.sdn["zones"].get(str(self.sdn_running["vnets"][bridge].get("zone"))) or {}
                nodes = [n for n in re.split(r"[,;\s]+", str(zone.get("nodes") or "")) if n]
                if nodes and node not in nodes:
                    raise TaskError(f"vnet {bridge} is not allowed on this node")
            if found["vnet"] and not found["vlanaware"] and (options.get("tag") or options.get("trunks")):
                raise TaskError(f"vm vlans are not allowed on vnet {bridge}")
            if not found["vnet"] and not found["vlanaware"] and options.get("trunks"):
                raise TaskError("vlan aware feature need to be enabled to use trunks")

    def check_bridge_access(self, user: str, values) -> None:
        """qemu-server ``check_bridge_access`` over ``values`` (NIC values)."""
        if user.split("!")[0] == "root@pam" and "!" not in user:
            return
        for value in values:
            options = _net_options(value)
            bridge = options.get("bridge")
            if not bridge:
                continue
            zone = (self.sdn["vnets"].get(bridge) or {}).get("zone") or "localnetwork"
            tags = [options["tag"]] if options.get("tag") else []
            tags += [t for t in re.split(r"[;,\s]+", options.get("trunks") or "") if t]
            for path in [f"/sdn/zones/{zone}/{bridge}/{tag}" for tag in tags] or [
                f"/sdn/zones/{zone}/{bridge}"
            ]:
                if not self._sdn_use(user, path):
                    raise PveError(403, f"Permission check failed ({path}, SDN.Use)")

    def _sdn_use(self, user: str, path: str) -> bool:
        """SDN.Use on ``path`` or, propagated, on a parent (fakepve's grants always propagate)."""
        parts = path.split("/")
        return any(
            self.allowed(user, "/".join(parts[:n]) or "/", "SDN.Use") for n in range(len(parts), 0, -1)
        )

    async def _start_steps(self, ct, user, skiplock=False):
        self.plug_nics(ct.node, ct.config)
        return await super()._start_steps(ct, user, skiplock)

    async def task(self, node, ttype, tid, user, body, vm=None, lock=True, log=()):
        if ttype == "qmstart" and vm is not None:

            async def start():
                self.plug_nics(
                    vm.node, {**vm.config, **{k: v for k, v in vm.pending.items() if v is not None}}
                )
                return await body()

            return await super().task(node, ttype, tid, user, start, vm=vm, lock=lock, log=log)
        if ttype == "qmcreate" and vm is not None:

            async def create():
                note = await body()
                pin_windows_machine(vm.config)
                return note

            return await super().task(node, ttype, tid, user, create, vm=vm, lock=lock, log=log)
        if ttype != "qmclone" or vm is None:
            return await super().task(node, ttype, tid, user, body, vm=vm, lock=lock, log=log)

        async def clone():
            note = await body()
            self._own_cloudinit(vm)
            return note

        return await super().task(node, ttype, tid, user, clone, vm=vm, lock=lock, log=log)

    async def _qm_clone(self, v, user):
        """``clone_vm``'s storage rules fakepve leaves out: a clone to another node (``target``) of a
        VM with a volume on storage that is not shared (``$check_storage_access_clone``, CD-ROM ISOs
        included), then a linked clone of a disk pve-storage ``volume_has_feature`` cannot clone
        (``linked_clones``): on a storage whose plugin cannot (lvm, iscsi, iscsidirect), or not a base
        volume, its own name (the volname's last part) not ``base-…`` (``parse_volname``'s
        ``$isBase``), as a linked clone's own disk ``<M>/base-M-disk-0.qcow2/<N>/vm-N-disk-0.qcow2``,
        which fakepve (``'base-' in volume``) clones."""
        source = self.find(v["node"], int(v["vmid"]))
        target = v.get("target") if v.get("target") not in (v["node"], "localhost") else None
        full = v.get("full")
        linked = (str(full) in ("0", "false")) if full is not None else bool(source.template)
        shared = True
        refused = None
        for key, value in sorted(source.config.items()):
            if not DRIVE.fullmatch(key):
                continue
            volume, props = split_drive(value)
            sid, name = volume_ref(volume)
            if sid is None or sid not in self.storages or volume in ("none", "cdrom"):
                continue
            store = self.storages[sid]
            shared = shared and (store.get("type") in SHARED_TYPES or str(store.get("shared") or "0") == "1")
            cloned = not is_cdrom(volume, props) and not CLOUDINIT.search(volume) and key != "tpmstate0"
            if linked and cloned and refused is None and not linked_clones(str(store.get("type")), name):
                refused = f"Linked clone feature is not supported for '{volume}' ({key})"
        if target and not shared:
            raise die(f"can't clone VM to node '{target}' (VM uses local storage)")
        if refused:
            raise die(refused)
        if v.get("storage"):
            self._clone_storage[int(v["newid"])] = v["storage"]
        answer = await super()._qm_clone(v, user)
        # clone_vmfw_conf: the new vmid's firewall is the source's, or none.
        guests = self._fw()["guests"]
        guests.pop(int(v["newid"]), None)
        if int(v["vmid"]) in guests:
            guests[int(v["newid"])] = copy.deepcopy(guests[int(v["vmid"])])
        return answer

    def _own_cloudinit(self, vm) -> None:
        """Give a clone its own ``vm-<vmid>-cloudinit`` volume in place of its source's (``clone_vm``
        full-clones a cloud-init drive)."""
        for key, value in list(vm.config.items()):
            if not DRIVE.fullmatch(key):
                continue
            volume, props = split_drive(value)
            sid, name = volume_ref(volume)
            found = CLOUDINIT.fullmatch(name or "")
            if sid is None or not found or int(found.group(2)) == vm.vmid:
                continue
            record = dict(self._volumes(sid).get(name) or {"content": "images", "format": "raw"})
            dest = self._clone_storage.get(vm.vmid, sid)
            if dest == sid:
                folder, suffix = (f"{vm.vmid}/" if found.group(1) else ""), found.group(3) or ""
            else:
                path = bool(self.storages[dest].get("path"))
                folder, suffix = (f"{vm.vmid}/", f".{record.get('format') or 'qcow2'}") if path else ("", "")
            own = f"{folder}vm-{vm.vmid}-cloudinit{suffix}"
            record.update(vmid=vm.vmid, size=int(record.get("size") or 4 * 1024**2))
            self.storages[dest].setdefault("volumes", {})[own] = record
            vm.config[key] = join_drive(f"{dest}:{own}", props)
        self._clone_storage.pop(vm.vmid, None)

    def _routes_qemu_resize(self):
        return [("PUT", "/nodes/{node}/qemu/{vmid}/resize", self._qm_resize)]

    # ------------------------------------------------------------------------------ config read

    async def _config_get(self, request):
        vm = self._vm(request, "VM.Audit")
        query = self._verify(request, await params(request))
        if query.get("snapshot") and query.get("current"):
            text = "cannot use 'snapshot' parameter with 'current'"
            raise param_error(snapshot=text, current=text)
        if query.get("snapshot"):
            snap = vm.snapshots.get(query["snapshot"])
            if snap is None:
                raise die(f"snapshot '{query['snapshot']}' does not exist")
            config = dict(snap)
        else:
            config = dict(vm.config)
            if not query.get("current"):
                for key, value in vm.pending.items():
                    if value is None:
                        config.pop(key, None)
                    else:
                        config[key] = value
        if "memory" in config:
            config["memory"] = str(config["memory"])
        if config.get("cipassword"):
            config["cipassword"] = MASK
        config["digest"] = vm.digest()
        return ok(config)

    async def _pending(self, request):
        vm = self._vm(request, "VM.Audit")
        rows = [{"key": "digest", "value": vm.digest()}]
        for key in sorted(set(vm.config) | set(vm.pending)):
            row = {"key": key}
            if key in vm.config:
                row["value"] = MASK if key == "cipassword" else vm.config[key]
            if key in vm.pending:
                if vm.pending[key] is None:
                    row["delete"] = 1
                else:
                    row["pending"] = MASK + " " if key == "cipassword" else vm.pending[key]
            rows.append(row)
        return ok(rows)

    # ----------------------------------------------------------------------------- config write

    def _stored(self, vm, updates: dict) -> dict:
        """The values ``update_vm_api`` stores for ``updates``: typed, MACs filled in, tags unique."""
        spec = load_schema().paths[CONFIG_PATH]["PUT"]["parameters"]
        typed, _errors = validate({"properties": spec["properties"]}, updates)
        for key, value in typed.items():
            if re.fullmatch(r"net\d+", key):
                typed[key] = with_mac(value)
            elif key == "tags":
                typed[key] = unique_tags(value, self.datacenter.get("tag-style") or {})
            elif key == "vmgenid" and str(value) == "1":
                typed[key] = str(uuid.uuid4())
        return typed

    def _qm_new_drive(self, vmid, key, value, default):
        volume, props = split_drive(value)
        for option in BOOLEAN_DRIVE_OPTIONS & set(props):
            props[option] = parse_boolean(props[option])
        value = join_drive(volume, props)
        sid, name = volume_ref(volume)
        if key == "efidisk0" and NEW_DISK.match(volume) and props.get("pre-enrolled-keys") == "1":
            made, volids = super()._qm_new_drive(vmid, key, value, default)
            volume, props = split_drive(made)
            props["ms-cert"] = "2023k"  # OVMF.pm create_efidisk: is_ms_2023_cert_enrolled($ovmf_vars)
            return join_drive(volume, props), volids
        if name != "cloudinit":
            return super()._qm_new_drive(vmid, key, value, default)
        sid = sid or default
        if not sid:
            raise die("no storage ID specified (and no default storage)")
        store = self._store(sid)
        path = _is_file(store)
        fmt = props.pop("format", None) or ("qcow2" if path else "raw")
        volname = f"{vmid}/vm-{vmid}-cloudinit.{fmt}" if path else f"vm-{vmid}-cloudinit"
        size = 4 * 1024**2  # Cloudinit.pm CLOUDINIT_DISK_SIZE
        if "avail" in store:
            store["avail"] -= size
        store.setdefault("volumes", {})[volname] = {
            "content": "images",
            "format": fmt,
            "size": size,
            "vmid": vmid,
        }
        props.update(media="cdrom")
        return join_drive(f"{sid}:{volname}", props), [f"{sid}:{volname}"]

    @staticmethod
    def _special_drive_change(vm, updates: dict) -> None:
        """``prohibit_tpm_version_change`` and ``OVMF.pm`` ``drive_change`` on a write of
        ``tpmstate0``/``efidisk0`` that keeps its volume."""
        for key in ("tpmstate0", "efidisk0"):
            if key not in updates or key not in vm.config:
                continue
            (old, was), (new, will) = split_drive(vm.config[key]), split_drive(updates[key])
            if old != new:
                continue
            if key == "tpmstate0" and was.get("version", "v1.2") != will.get("version", "v1.2"):
                raise die("cannot change TPM state version after creation")
            marker = will.get("ms-cert")
            if key == "efidisk0" and marker != was.get("ms-cert") and str(marker or "").startswith("2023"):
                will.pop("ms-cert")
                if parse_boolean(will.get("pre-enrolled-keys", "0")) == "1":
                    will["ms-cert"] = "2023k"  # ensure_ms_2023_cert_enrolled
                updates[key] = join_drive(new, will)

    def _startup_perm(self, user, keys) -> None:
        """``$check_vm_modify_config_perm``: ``startup`` needs Sys.Modify on ``/``."""
        if user != "root@pam" and "startup" in keys:
            self.require(user, "/", "Sys.Modify")

    async def _qm_create(self, v, user):
        check_root_only(user, v)
        self._startup_perm(user, v)
        self.check_bridge_access(user, [v[k] for k in v if re.fullmatch(r"net\d+", k)])
        return await super()._qm_create(v, user)

    @staticmethod
    def _boot_order(vm, updates: dict) -> None:
        """``update_vm_api``'s own ``boot`` changes, when ``boot`` has an ``order``: a deleted device
        is dropped from it (a written ``boot`` then wins), a drive written as a CD-ROM (not cloud-init)
        that it does not name is appended. PVE handles written keys in hash order; the fake takes the
        order in which the append comes last and overwrites a ``boot`` written beside it."""
        found = re.match(r"order=([^,]*)", str(vm.config.get("boot") or ""))
        order = split_list(found.group(1)) if found else []
        if not order:
            return
        removed = [key for key in split_list(updates.get("delete")) if key in order]
        appended = [
            key
            for key in sorted(updates)
            if DRIVE.fullmatch(key)
            and key not in order
            and split_drive(updates[key])[1].get("media") == "cdrom"
            and not CLOUDINIT.search(split_drive(updates[key])[0] or "")
            and not str(updates[key]).split(",")[0].endswith(":cloudinit")
        ]
        if appended or (removed and "boot" not in updates):
            kept = [key for key in order if key not in removed]
            updates["boot"] = "order=" + ";".join(kept + appended)

    async def _apply_config(self, vm, user, p):
        check_update_perms(self, user, vm, p)
        check_root_only(user, p, {**vm.config, **{k: v for k, v in vm.pending.items() if v is not None}})
        self._startup_perm(user, [*p, *split_list(p.get("delete"))])
        nics = [k for k in [*p, *split_list(p.get("delete"))] if re.fullmatch(r"net\d+", k)]
        old = {**vm.config, **{k: v for k, v in vm.pending.items() if v is not None}}
        self.check_bridge_access(
            user, [old[k] for k in nics if old.get(k)] + [p[k] for k in nics if p.get(k)]
        )
        p = dict(p)
        self._boot_order(vm, p)
        updates = self._stored(vm, {k: v for k, v in p.items() if k not in ("node", "vmid")})
        self._special_drive_change(vm, updates)
        password = updates.pop("cipassword", None)
        before = dict(vm.config)
        made: list[str] = []
        try:
            for key in sorted(key for key in updates if DRIVE.fullmatch(key)):
                updates[key], volids = self._qm_new_drive(vm.vmid, key, updates[key], None)
                made.extend(volids)
            await super()._apply_config(vm, user, updates)
        except PveError:
            for volid in made:
                self._qm_free(volid)
            raise
        errors: dict[str, str] = {}
        if vm.status == "running":
            features = hotplug_features(before.get("hotplug"))
            failing = self.hotplug_errors.get(vm.vmid, {})
            for key in [
                key for key in vm.pending if key in updates or key in split_list(updates.get("delete"))
            ]:
                if hotplugs(key, before.get(key), vm.pending[key], features, before):
                    if key in failing:
                        # vmconfig_hotplug_pending's $add_error: the value stays in [PENDING].
                        errors[key] = f"hotplug problem - {failing[key]}"
                        continue
                    value = vm.pending.pop(key)
                    if value is None:
                        vm.config.pop(key, None)
                    else:
                        vm.config[key] = value
        if password is not None:
            windows = str(vm.config.get("ostype", "")).startswith("w")
            vm.config["cipassword"] = password if windows or CRYPTED.match(password) else encrypt_pw(password)
            vm.pending.pop("cipassword", None)
        if errors:
            # update_vm_api: raise_param_exc($errors) after the pending values are written and the
            # rest hot-plugged; what it allocated stays (the pending drive names it).
            raise param_error(**errors)

    async def _config_post(self, request):
        """``update_vm_async``: the same ``update_vm_api`` in a ``qmconfig`` task, whose error is the
        exception as PVE's worker prints it (pve-common ``RESTEnvironment.pm`` ``fork_worker``:
        ``TASK ERROR: <err>`` with newlines turned to spaces; ``Exception.pm`` ``stringify``: ``<code>
        <msg>`` then ``<field>: <reason>`` per error). fakepve keeps only the message."""
        p = await params(request)
        self._verify(request, p)
        vm = self._vm(request)
        user = request[USER]
        self.need_quorum()

        async def body():
            try:
                await self._apply_config(vm, user, p)
            except PveError as exc:
                raise TaskError(task_error(exc)) from exc

        return ok(await self.task(vm.node, "qmconfig", vm.vmid, user, body))

    # ----------------------------------------------------------------------------------- resize

    def _volume_size(self, volume: str, props: dict) -> int | None:
        """The volume's size in bytes (``PVE::Storage::volume_size_info``): the storage's record, else
        the size the drive's ``size=`` states."""
        sid, name = volume_ref(volume)
        if sid in self.storages:
            record = self._volumes(sid).get(name)
            if record and record.get("size"):
                return int(record["size"])
        text = props.get("size")
        found = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT])?", str(text or ""))
        return int(float(found.group(1)) * SIZE_UNITS.get(found.group(2) or "", 1)) if found else None

    async def _qm_resize(self, v, user):
        if v.get("skiplock") and user != "root@pam":
            raise param_error(skiplock="Only root may use this option.")
        node, vmid, disk, text = v["node"], int(v["vmid"]), v["disk"], str(v["size"])

        def update(vm):
            if v.get("digest") and v["digest"] != vm.digest():
                raise TaskError("checksum mismatch (file change by other user?)")
            if vm.lock and not v.get("skiplock"):
                raise TaskError(f"VM is locked ({vm.lock})")
            if not vm.config.get(disk):
                raise TaskError(f"disk '{disk}' does not exist")
            volume, props = split_drive(vm.config[disk])
            if not volume:
                raise TaskError(f"disk '{disk}' has no associated volume")
            if is_cdrom(volume, props):
                raise TaskError("you can't resize a cdrom")
            sid, name = volume_ref(volume)
            if not self.allowed(user, f"/storage/{sid}", "Datastore.AllocateSpace"):
                raise TaskError(f"Permission check failed (/storage/{sid}, Datastore.AllocateSpace)")
            size = self._volume_size(volume, props)
            if size is None:
                raise TaskError(f"Could not determine current size of volume '{volume}'")
            grow, number, unit = SIZE.match(text).groups()
            new = int(float(number) * SIZE_UNITS.get(unit or "", 1)) + (size if grow else 0)
            if new < size:
                raise TaskError("shrinking disks is not supported")
            if new == size:
                return
            record = self.storages.get(sid, {}).get("volumes", {}).get(name)
            if record is not None:
                if "avail" in self.storages[sid]:
                    self.storages[sid]["avail"] -= new - int(record.get("size") or 0)
                record["size"] = new
            vm.config[disk] = join_drive(volume, dict(props, size=format_size(new)))
            self.resized.append((vm.vmid, disk, new))

        try:
            vm = self.find(node, vmid)
        except PveError as exc:
            missing = exc.message

            async def fail():
                raise TaskError(missing)

            return await self.task(node, "resize", vmid, user, fail)

        async def body():
            update(vm)

        return await self.task(node, "resize", vmid, user, body, vm=vm)
