"""A seeded fake PVE cluster, served over TLS on loopback.

The cluster is what the example pillar expects to find: two nodes (``pve1``, ``pve2``); storages ``local``
(dir, holding the Debian 13 OS template, a Debian 13 installer ISO and the vzdump backups of a container
150 and a VM 250 that no longer exist), ``local-lvm`` (lvmthin) and
``local-zfs`` (zfspool); a running container 120 (``dns1`` on pve1) for the pillar to adopt; a QEMU VM 300
(``router`` on pve2) holding a vmid no container may take; a stopped VM 220 (``build`` on pve2) that the
example pillar declares on pve1 and migrates; and a VM template 9000 (``debian-13-cloud`` on
pve1: a cloud-image disk and a cloud-init drive) for the pillar to clone. Two API tokens carry the
privileges the plan and apply steps need, granted on ``/``, and each the privileges that read the backups
on their storage and archived vmids (fakepve has privileges but no roles, so each token gets its list of
privileges directly).

Used three ways:

- ``seed(pve)`` on any ``fakepve.FakePve`` (e.g. fakepve's own ``fakepve`` fixture);
- ``ServedCluster`` in-process, as the ``cluster`` and ``fresh_cluster`` fixtures of tests/conftest.py
  and the demo (``demo/run.py``) use it;
- ``python -m tests.support.cluster --state-dir DIR``, the process the sandbox (``scripts/sandbox``)
  starts and stops by its PID: it writes ``DIR/cluster.json`` and prints ``ready <url>``.

The served fake is ``ServedPve``: every staging fake below over one another, each adding what
fakepve lacks for its family (they share ``tests.support.ceph.CephPve`` as their base and call
``super()``, so their order is Python's method resolution order):
``tests.support.datacenter.DatacenterPve`` (``datacenter.cfg``, Datacenter → Options) over
``tests.support.ha.HaPve`` (HA resources, groups and rules by release) over
``tests.support.restore.RestorePve`` (backup archives holding a guest's config, and restores of them:
the seed stores a container's and a VM's, ``CT_ARCHIVE`` and ``VM_ARCHIVE``),
``tests.support.firewall.FirewallRulesPve`` (firewall rules read back as PVE writes and parses them),
``tests.support.usercfg.UserCfgPve`` (users, groups, API tokens and realms),
``tests.support.backup.BackupPve`` (backup jobs),
``tests.support.metrics.MetricServerPve`` (external metric servers),
``tests.support.replication.ReplicationPve`` (storage replication jobs),
``tests.support.mappings.MappingPve`` (resource mappings),
``tests.support.acme.AcmePve`` (ACME plugins and the nodes' certificate configuration),
``tests.support.notifications.NotificationPve`` (notification endpoints and matchers),
``tests.support.sdn_extras.SdnExtrasPve`` (SDN controllers, IPAMs and DNS servers),
``tests.support.node_config.NodeConfigPve`` (each node's resolv.conf, hosts file and time zone),
``tests.support.apt.AptPve`` (each node's APT repository files),
``tests.support.certificates.CertificatePve`` (the nodes' pveproxy certificates),
``tests.support.pmxcfs.PmxcfsPve`` (containers' config files on disk, for raw ``lxc.*`` lines),
then ``tests.support.ceph.CephPve`` (Ceph pools, CRUSH rules and health) and
``tests.support.migrate.MigratePve`` (VM migrations and their preconditions) over
``tests.support.qemu.QemuPve``: fakepve plus stored roles and ACL entries
(``tests.support.access.AccessPve``), staged node networks and stored SDN configuration
(``tests.support.network.NetworkPve``), which fakepve itself only answers with synthesised values, and
VM config reads, writes and disk resizes as qemu-server answers them.

fakepve answers requests on its own asyncio loop; everything here runs that loop in a daemon thread, as
fakepve's pytest plugin does, so plain synchronous tests can use it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import shutil
import signal
import stat
import sys
import tempfile
import threading
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from fakepve import FakePve, settle
from fakepve.certs import make_cert

from tests.support.acme import AcmePve
from tests.support.apt import AptPve
from tests.support.backup import BackupPve
from tests.support.certificates import CertificatePve
from tests.support.content import ContentPve
from tests.support.datacenter import DatacenterPve
from tests.support.firewall import FirewallRulesPve
from tests.support.ha import HaPve
from tests.support.mappings import MappingPve
from tests.support.metrics import MetricServerPve
from tests.support.migrate import MigratePve
from tests.support.node_config import NodeConfigPve
from tests.support.notifications import NotificationPve
from tests.support.pmxcfs import PmxcfsPve
from tests.support.pvesh import SendersPve
from tests.support.replication import ReplicationPve
from tests.support.restore import RestorePve
from tests.support.sdn_extras import SdnExtrasPve
from tests.support.snippets import SnippetsPve
from tests.support.usercfg import UserCfgPve


class ServedPve(
    SendersPve,
    SnippetsPve,
    PmxcfsPve,
    DatacenterPve,
    HaPve,
    FirewallRulesPve,
    UserCfgPve,
    BackupPve,
    MetricServerPve,
    ReplicationPve,
    MappingPve,
    AcmePve,
    NotificationPve,
    ContentPve,
    SdnExtrasPve,
    NodeConfigPve,
    AptPve,
    CertificatePve,
    MigratePve,
):
    """The fake cluster the tests, the demo and the sandbox serve: every staging fake (module docstring),
    with the identity that sent each request (``tests.support.pvesh.SendersPve``) and the snippets on
    disk listed (``tests.support.snippets.SnippetsPve``)."""


if TYPE_CHECKING:  # typing.Self is Python 3.11+; annotations are not evaluated (PEP 563)
    from typing import Self

HOST = "127.0.0.1"
# Real seconds to wait for the fake to start, stop, or finish a coroutine run on its loop.
LOOP_TIMEOUT = 30

TEMPLATE = "local:vztmpl/debian-13-standard_13.0-1_amd64.tar.zst"
# The size the template volume pretends to have on `local`, in bytes.
TEMPLATE_SIZE = 123 * 1024**2
# An installer ISO on `local`, for a VM's CD-ROM (`ide2: <ISO>,media=cdrom`), and its size in bytes.
ISO = "local:iso/debian-13.2.0-amd64-netinst.iso"
ISO_SIZE = 754 * 1024**2

# What the URL of the example pillar's download (proxmox:content) holds (tests.support.content: nothing is
# fetched), its sha256 the one the pillar declares: a stand-in for the Alpine ISO the URL names.
DOWNLOAD_URL = "https://dl-cdn.alpinelinux.org/alpine/v3.22/releases/x86_64/alpine-virt-3.22.2-x86_64.iso"
DOWNLOAD_BODY = b"salt-proxmox demo: a stand-in for alpine-virt-3.22.2-x86_64.iso\n" * 1024
DOWNLOAD_VOLID = "local:iso/alpine-virt-3.22.2-x86_64.iso"

# SDN.Audit: node network listings show a bridge only to a caller with SDN.Audit (or SDN.Use) on it, and SDN
# listings only the zones and vnets the caller may audit (pve-manager PVE/API2/Network.pm, pve-network).
# Mapping.Audit on /mapping/notifications reads notification endpoints and matchers (Notifications.pm).
READ_PRIVS = ("VM.Audit", "Datastore.Audit", "Sys.Audit", "Pool.Audit", "SDN.Audit", "Mapping.Audit")
PROVISION_PRIVS = (
    "VM.Allocate",
    "VM.Audit",
    "VM.Config.CPU",
    "VM.Config.Disk",
    "VM.Config.HWType",
    "VM.Config.Memory",
    "VM.Config.Network",
    "VM.Config.Options",
    "VM.PowerMgmt",
    # VMs: a CD-ROM drive needs VM.Config.CDROM, cloud-init keys VM.Config.Cloudinit, a clone VM.Clone on
    # its source (qemu-server src/PVE/API2/Qemu.pm check_vm_modify_config_perm, clone_vm).
    "VM.Config.CDROM",
    "VM.Config.Cloudinit",
    "VM.Clone",
    "Datastore.AllocateSpace",
    "Datastore.Audit",
    "SDN.Use",
    "Sys.Audit",
    # What the example estate's simple objects need (PVE 9 API schema permissions): cluster firewall
    # aliases Sys.Modify on /, custom roles Sys.Modify on /access, pools Pool.Allocate on /pool/<id>,
    # ACL entries Permissions.Modify on their path ("perm-modify").
    "Sys.Modify",
    "Pool.Allocate",
    "Permissions.Modify",
    # Storage definitions: Datastore.Allocate on /storage/<id> to create and update, on /storage to
    # delete (pve-storage src/PVE/API2/Storage/Config.pm create, update, delete).
    "Datastore.Allocate",
    # Downloads: Datastore.AllocateTemplate on /storage/<id> (pve-storage Status.pm download_url).
    "Datastore.AllocateTemplate",
    # Node interfaces and their reload need Sys.Modify on /nodes/<node> (above); SDN zones, vnets, subnets,
    # the SDN lock and the SDN apply SDN.Allocate (pve-network PVE/API2/Network/SDN*.pm).
    "SDN.Allocate",
    # HA resources, groups and rules: every write needs Sys.Console on / (pve-ha-manager
    # API2/HA/{Resources,Groups,Rules}.pm permissions).
    "Sys.Console",
    # Users, groups, API tokens and realms (pve-access-control src/PVE/API2/User.pm create_user,
    # update_user, generate_token: Realm.AllocateUser on /access/realm/<realm> and User.Modify on
    # /access/groups; Group.pm: Group.Allocate on /access/groups; Domains.pm: Realm.Allocate on
    # /access/realm).
    "User.Modify",
    "Realm.AllocateUser",
    "Group.Allocate",
    "Realm.Allocate",
    # Snapshots: VM.Snapshot on the guest (pve-container API2/LXC/Snapshot.pm, qemu-server API2/Qemu.pm
    # snapshot); a backup job of a pool: VM.Backup on /pool/<pool> (pve-manager API2/Backup.pm create_job).
    "VM.Snapshot",
    "VM.Snapshot.Rollback",
    "VM.Backup",
    # Replication jobs: VM.Replicate on /vms/<vmid> (pve-manager API2/ReplicationConfig.pm).
    "VM.Replicate",
    # Notification endpoints and matchers: Mapping.Modify on /mapping/notifications, an endpoint's create and
    # update Sys.Audit and Sys.Modify on / too (pve-manager PVE/API2/Cluster/Notifications.pm).
    "Mapping.Modify",
    # A declared move: VM.Migrate on /vms/<vmid> (qemu-server API2/Qemu.pm migrate_vm and
    # migrate_vm_precondition, pve-container API2/LXC.pm migrate_vm).
    "VM.Migrate",
)
READ_TOKEN_ID = "salt-read@pve!plan"
PROVISION_TOKEN_ID = "salt-provision@pve!apply"

NODES = ("pve1", "pve2")

# The running container the example pillar adopts, exactly as GET .../lxc/120/config shows it (plus digest).
DNS1_VMID = 120
DNS1_NODE = "pve1"
DNS1_CONFIG: dict[str, Any] = {
    "hostname": "dns1",
    "memory": 512,
    "swap": 512,
    "cores": 1,
    "rootfs": "local-zfs:subvol-120-disk-0,size=4G",
    "net0": "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:5E:12:0A,ip=10.0.0.53/24,gw=10.0.0.1,type=veth",
    "features": "nesting=1",
    "tags": "dns;infra",
    "onboot": 1,
    "startup": "order=1",
    "ostype": "debian",
    "arch": "amd64",
    "unprivileged": 1,
    "description": "Resolver for the lab\n",
}

# A QEMU guest, so tests can check what happens when a container is planned on a vmid a VM holds.
ROUTER_VMID = 300
ROUTER_NODE = "pve2"
ROUTER_CONFIG: dict[str, Any] = {
    "name": "router",
    "memory": 1024,
    "cores": 2,
    "sockets": 1,
    "ostype": "l26",
    "scsihw": "virtio-scsi-single",
    "scsi0": "local-lvm:vm-300-disk-0,iothread=1,size=8G",
    "net0": "virtio=BC:24:11:3A:00:01,bridge=vmbr0",
    "net1": "virtio=BC:24:11:3A:00:02,bridge=vmbr1",
    "boot": "order=scsi0",
    "onboot": 1,
}

# A stopped VM on pve2, built by hand, that the example pillar adopts and declares on pve1 with
# `migrate: true`: its one disk is on local-lvm (not shared, on every node), so the move is offline with
# that disk copied (guest/migrate.py; tests.support.migrate.MigratePve). As GET .../qemu/220/config shows
# it (plus digest).
BUILD_VMID = 220
BUILD_NODE = "pve2"
BUILD_DISK_SIZE = 8 * 1024**3
BUILD_CONFIG: dict[str, Any] = {
    "name": "build",
    "memory": 2048,
    "cores": 2,
    "sockets": 1,
    "ostype": "l26",
    "scsihw": "virtio-scsi-single",
    "scsi0": "local-lvm:vm-220-disk-0,iothread=1,size=8G",
    "net0": "virtio=BC:24:11:22:00:01,bridge=vmbr0",
    "boot": "order=scsi0",
    "smbios1": "uuid=7b2d4c5e-9f3a-4a6b-8d1e-2c3d4e5f6a22",
    "vmgenid": "2b8e2f3a-4b5c-4d6e-9f7a-8b9c0d1e2f22",
}

# A VM template made the way PVE's cloud-init guide makes one (a cloud image imported as scsi0, a cloud-init
# drive on ide2, a serial console), then converted with `qm template`, so its disk is a base volume. As GET
# .../qemu/9000/config shows it (plus digest); the volumes are registered on local-lvm below.
CLOUD_TEMPLATE_VMID = 9000
CLOUD_TEMPLATE_NODE = "pve1"
CLOUD_TEMPLATE_DISK_SIZE = 3 * 1024**3
CLOUD_TEMPLATE_CONFIG: dict[str, Any] = {
    "name": "debian-13-cloud",
    "template": 1,
    "memory": 2048,
    "cores": 2,
    "sockets": 1,
    "cpu": "x86-64-v2-AES",
    "ostype": "l26",
    "scsihw": "virtio-scsi-single",
    "scsi0": "local-lvm:base-9000-disk-0,discard=on,iothread=1,size=3G",
    "ide2": "local-lvm:vm-9000-cloudinit,media=cdrom",
    "net0": "virtio=BC:24:11:90:00:01,bridge=vmbr0",
    "serial0": "socket",
    "vga": "serial0",
    "agent": "1",
    "boot": "order=scsi0",
    "ciuser": "debian",
    "ipconfig0": "ip=dhcp",
    "smbios1": "uuid=6f1c3a4e-8d2b-4f5a-9c7e-1b2d3e4f5a60",
    "vmgenid": "0c7d1e2f-3a4b-4c5d-8e6f-7a8b9c0d1e2f",
    "meta": "creation-qemu=10.0.2,ctime=1761955200",
    "description": "Debian 13 generic cloud image, cloud-init ready\n",
}

# pve.storages entries: the storage.cfg options, plus fakepve's own state keys (`files`, `volumes`,
# `active`, `avail`; see fakepve.storage.INTERNAL). A zfspool needs `pool` (fakepve.storage.TYPES).
STORAGES: dict[str, dict[str, Any]] = {
    "local": {"type": "dir", "path": "/var/lib/vz", "content": "iso,vztmpl,backup", "avail": 50 * 1024**3},
    "local-lvm": {"type": "lvmthin", "vgname": "pve", "thinpool": "data", "content": "images,rootdir"},
    "local-zfs": {"type": "zfspool", "pool": "rpool/data", "sparse": 1, "content": "images,rootdir"},
}

# Backup archives on `local` that the example pillar restores (tests.support.restore): a container 150 and a
# VM 250 that no longer exist, each archive holding the config vzdump saved. PVE lists a backup only to a
# caller with Datastore.AllocateSpace on its storage and VM.Backup on the archived vmid (pve-storage
# PVE/Storage.pm check_volume_access): both tokens get them there (ARCHIVE_PRIVS).
CT_ARCHIVE = "local:backup/vzdump-lxc-150-2026_11_30-02_00_00.tar.zst"
CT_ARCHIVE_CONFIG: dict[str, Any] = {
    "hostname": "web-old",
    "memory": 1024,
    "swap": 512,
    "cores": 2,
    "rootfs": "local-lvm:vm-150-disk-0,size=8G",
    "net0": "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:15:00:01,ip=dhcp,type=veth",
    "ostype": "debian",
    "arch": "amd64",
    "unprivileged": 1,
}
VM_ARCHIVE = "local:backup/vzdump-qemu-250-2026_11_30-02_00_00.vma.zst"
VM_ARCHIVE_CONFIG: dict[str, Any] = {
    "name": "app-old",
    "memory": 2048,
    "cores": 2,
    "sockets": 1,
    "ostype": "l26",
    "scsihw": "virtio-scsi-single",
    "scsi0": "local-lvm:vm-250-disk-0,iothread=1,size=8G",
    "net0": "virtio=BC:24:11:25:00:01,bridge=vmbr0",
    "boot": "order=scsi0",
    "smbios1": "uuid=2a1c3a4e-8d2b-4f5a-9c7e-1b2d3e4f5a25",
    "vmgenid": "1a7d1e2f-3a4b-4c5d-8e6f-7a8b9c0d1e25",
}
ARCHIVE_SIZE = 412 * 1024**2
ARCHIVE_CTIME = 1796004000  # 2026-11-30 02:00:00 UTC
# Resource mappings (pve-manager PVE/API2/Cluster/Mapping/{PCI,USB,Dir}.pm): Mapping.Audit reads one,
# Mapping.Modify writes it; a VM naming one needs Mapping.Use on /mapping/<kind>/<id> (qemu-server
# API2/Qemu.pm check_hostpci_perm, check_usb_perm, check_dir_perm). Granted apart, on /.
MAPPING_PRIVS = {"read": ("Mapping.Audit",), "provision": ("Mapping.Audit", "Mapping.Modify", "Mapping.Use")}
ARCHIVE_PRIVS = {
    "/storage/local": ("Datastore.AllocateSpace",),
    "/vms/150": ("VM.Backup",),
    "/vms/250": ("VM.Backup",),
}

T = TypeVar("T")


@dataclass(frozen=True, repr=False)
class Seeded:
    """The API tokens seed() registered, each a ``(token_id, secret)`` pair.

    ``token_id`` is ``user@realm!name``; a client sends ``Authorization: PVEAPIToken=<token_id>=<secret>``.
    The repr names the token ids only, so a failing assertion never prints a secret.
    """

    read_token: tuple[str, str]
    provision_token: tuple[str, str]

    def __repr__(self) -> str:
        read_id, provision_id = self.read_token[0], self.provision_token[0]
        return f"Seeded(read_token=({read_id!r}, ***), provision_token=({provision_id!r}, ***))"


def seed(pve: FakePve) -> Seeded:
    """Seed ``pve`` (not yet serving, or serving with no client yet) with the lab cluster; return its tokens.

    Replaces pve's storages with the three above (the OS template and the ISO on ``local``), adds node
    pve2, container 120, VMs 300 and 220 and the VM template 9000 (their volumes on ``local-lvm``), serves
    ``DOWNLOAD_BODY`` at ``DOWNLOAD_URL`` (a ``ContentPve``), registers the two tokens with fresh random
    secrets and grants each its privileges on ``/``. From then on fakepve checks privileges for every
    caller (before the first grant it lets everybody do everything).
    """
    for node in NODES:
        pve.add_node(node)
    pve.storages.clear()
    for name, options in STORAGES.items():
        pve.storages[name] = {"active": 1, "files": set(), "volumes": {}, **options}
    storage, _, volname = TEMPLATE.partition(":")
    content, _, filename = volname.partition("/")
    pve.store_file(storage, filename, TEMPLATE_SIZE, content=content)
    storage, _, volname = ISO.partition(":")
    pve.store_file(storage, volname.partition("/")[2], ISO_SIZE, content="iso")

    # defaults=False: FakeCt would otherwise fill in keys the config above leaves out on purpose.
    pve.add_ct(DNS1_VMID, node=DNS1_NODE, status="running", config=DNS1_CONFIG, defaults=False)
    pve.add_vm(ROUTER_VMID, ROUTER_CONFIG["name"], node=ROUTER_NODE, status="running", config=ROUTER_CONFIG)
    volumes = pve.storages["local-lvm"]["volumes"]
    volumes[f"vm-{BUILD_VMID}-disk-0"] = {
        "content": "images", "format": "raw", "size": BUILD_DISK_SIZE, "vmid": BUILD_VMID,
    }  # fmt: skip
    pve.add_vm(BUILD_VMID, BUILD_CONFIG["name"], node=BUILD_NODE, config=BUILD_CONFIG)
    for volname, size in (
        (f"base-{CLOUD_TEMPLATE_VMID}-disk-0", CLOUD_TEMPLATE_DISK_SIZE),
        (f"vm-{CLOUD_TEMPLATE_VMID}-cloudinit", 4 * 1024**2),
    ):
        volumes[volname] = {"content": "images", "format": "raw", "size": size, "vmid": CLOUD_TEMPLATE_VMID}
    pve.add_vm(
        CLOUD_TEMPLATE_VMID,
        CLOUD_TEMPLATE_CONFIG["name"],
        node=CLOUD_TEMPLATE_NODE,
        template=True,
        config=CLOUD_TEMPLATE_CONFIG,
    )

    if isinstance(pve, RestorePve):
        pve.add_archive(CT_ARCHIVE, CT_ARCHIVE_CONFIG, ARCHIVE_SIZE, ARCHIVE_CTIME)
        pve.add_archive(VM_ARCHIVE, VM_ARCHIVE_CONFIG, ARCHIVE_SIZE, ARCHIVE_CTIME)
    if isinstance(pve, ContentPve):
        pve.content_urls[DOWNLOAD_URL] = DOWNLOAD_BODY

    tokens = {}
    for token_id, privs in ((READ_TOKEN_ID, READ_PRIVS), (PROVISION_TOKEN_ID, PROVISION_PRIVS)):
        secret = secrets.token_hex(16)
        pve.apitokens[token_id] = secret
        pve.grant(token_id, "/", *privs)
        pve.grant(token_id, "/", *MAPPING_PRIVS["read" if token_id == READ_TOKEN_ID else "provision"])
        for path, more in ARCHIVE_PRIVS.items():
            pve.grant(token_id, path, *more)
        tokens[token_id] = (token_id, secret)
    return Seeded(read_token=tokens[READ_TOKEN_ID], provision_token=tokens[PROVISION_TOKEN_ID])


class ServedCluster:
    """A seeded FakePve serving https://127.0.0.1:<free port> from its own event loop in a daemon thread.

    ``with ServedCluster() as cluster:`` starts it; after start() these are set:

    - ``pve``: the FakePve, to inspect (``pve.requests``, ``pve.ct(120).config``) or to stage faults
      (``pve.fail(...)``, ``pve.lose_quorum()``);
    - ``url``: ``"https://127.0.0.1:PORT"`` (no ``/api2/json``);
    - ``cafile``: the self-signed certificate the fake serves, to pass as ``verify=``;
    - ``seeded``: the tokens, a Seeded.

    ``time_scale`` is fakepve's: 0 finishes every task before the request that started it returns; 0.01
    makes a 60 PVE-second task take 0.6 s. The certificate lives in a private temporary directory (0700)
    that stop() removes; the key is deleted as soon as the server has loaded it.
    """

    def __init__(self, time_scale: float = 0.0) -> None:
        self.time_scale = time_scale
        self.pve: FakePve | None = None
        self.url = ""
        self.cafile = ""
        self.seeded: Seeded | None = None
        self._dir: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"ServedCluster(url={self.url!r}, time_scale={self.time_scale!r})"

    def start(self) -> Self:
        """Seed and serve the cluster; returns self."""
        if self._loop is not None:
            raise RuntimeError("the cluster is already served")
        self._dir = tempfile.mkdtemp(prefix="salt-proxmox-pve-")
        try:
            certfile, keyfile, _der = make_cert(self._dir, hosts=(HOST,))
            pve = ServedPve(host=HOST, port=0)
            pve.time_scale = self.time_scale
            self.seeded = seed(pve)
            self.pve = pve
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._run, name=f"fakepve-{id(pve):x}", daemon=True)
            self._thread.start()
            self.run_coro(pve.start(certfile, keyfile))
            os.unlink(keyfile)
        except BaseException:
            self.stop()
            raise
        self.url = pve.url
        self.cafile = certfile
        return self

    def _run(self) -> None:
        assert self._loop is not None
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    def run_coro(self, coro: Coroutine[Any, Any, T], timeout: float = LOOP_TIMEOUT) -> T:
        """Run a coroutine on the fake's loop from the calling thread and return its result.

        For fakepve's async scenarios, e.g. ``cluster.run_coro(cluster.pve.hold_config_lock(120, 30))``.
        """
        if self._loop is None:
            coro.close()
            raise RuntimeError("the cluster is not served")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def stop(self) -> None:
        """Stop serving, end the loop thread and remove the certificate directory. Safe to call twice."""
        loop, thread = self._loop, self._thread
        try:
            if loop is not None and thread is not None and thread.is_alive():
                try:
                    self.run_coro(settle())
                    if self.pve is not None:
                        self.run_coro(self.pve.stop())
                    self.run_coro(_cancel_pending())
                finally:
                    loop.call_soon_threadsafe(loop.stop)
                    thread.join(LOOP_TIMEOUT)
            if loop is not None and (thread is None or not thread.is_alive()):
                loop.close()
        finally:
            self._loop = self._thread = None
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)
                self._dir = None


async def _cancel_pending() -> None:
    """Cancel what fakepve left running on its loop (a timed config lock, a scaled task) and let it end."""
    current = asyncio.current_task()
    pending = [task for task in asyncio.all_tasks() if task is not current]
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)


# ------------------------------------------------------------------------------------------ the process


def private_dir(path: str | os.PathLike[str]) -> Path:
    """The directory at path, created 0700 if missing; refuses one that others may read or enter."""
    directory = Path(path)
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = directory.stat()
    if info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
        raise SystemExit(f"{directory}: must be a directory of this user with mode 0700, to hold secrets")
    return directory


def write_private_json(path: Path, data: dict[str, Any]) -> None:
    """Write data as JSON to path with mode 0600 (whatever the umask), replacing the file."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        os.fchmod(out.fileno(), 0o600)
        json.dump(data, out, indent=2)
        out.write("\n")


@contextlib.contextmanager
def private_json(path: Path, data: dict[str, Any]) -> Iterator[Path]:
    """Write data to path (0600) for the duration of the with block, then remove it.

    The secrets in it are worthless once the server they belong to stops; none outlive the run.
    """
    write_private_json(path, data)
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


def catch_stop_signals() -> threading.Event:
    """From now on SIGTERM and SIGINT only set the returned event; wait() on it to serve until one arrives.

    Installed before anything is started, so a signal that comes during the start-up still lets the
    process stop what it started.
    """
    stopping = threading.Event()

    def handler(_signum: int, _frame: object) -> None:
        stopping.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, handler)
    return stopping


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.support.cluster --state-dir DIR [--time-scale X]``.

    Serves the seeded cluster and writes ``DIR/cluster.json`` (0600; DIR is created 0700)::

        {"url": "https://127.0.0.1:PORT", "cafile": "/tmp/.../fakepve.crt",
         "read": {"token_id": "salt-read@pve!plan", "secret": "..."},
         "provision": {"token_id": "salt-provision@pve!apply", "secret": "..."}}

    then prints one line, ``ready <url>``, and serves until SIGTERM or SIGINT. Exits 0 after a clean stop.
    The cafile stays valid while the process runs; cluster.json and the cafile are removed when it stops.
    """
    parser = argparse.ArgumentParser(
        prog="python -m tests.support.cluster", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--state-dir", required=True, help="private directory for cluster.json (made 0700)")
    parser.add_argument(
        "--time-scale", type=float, default=0.0, help="real seconds per PVE second; 0 ends tasks at once"
    )
    args = parser.parse_args(argv)
    stopping = catch_stop_signals()
    state = private_dir(args.state_dir)
    with ServedCluster(time_scale=args.time_scale) as cluster:
        assert cluster.seeded is not None
        read_id, read_secret = cluster.seeded.read_token
        provision_id, provision_secret = cluster.seeded.provision_token
        info = {
            "url": cluster.url,
            "cafile": cluster.cafile,
            "read": {"token_id": read_id, "secret": read_secret},
            "provision": {"token_id": provision_id, "secret": provision_secret},
        }
        with private_json(state / "cluster.json", info):
            print(f"ready {cluster.url}", flush=True)
            stopping.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
