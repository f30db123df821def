"""The VM test support (``tests.support.qemu.QemuPve``) answers as qemu-server does where fakepve 0.5.0
does not: the resize endpoint, ``GET …/config`` merging pending changes, ``cipassword`` masked, typed
values, a MAC for a new ``netN``, unique sorted tags, a clone's own cloud-init drive. Each test names
the qemu-server function whose behaviour it pins; the ``plain fakepve`` tests show the gap that makes
the support necessary.
"""

from __future__ import annotations

import re
import time

import pytest
import requests

from tests.support.cluster import (
    CLOUD_TEMPLATE_CONFIG,
    CLOUD_TEMPLATE_NODE,
    CLOUD_TEMPLATE_VMID,
    ISO,
    ROUTER_NODE,
    ROUTER_VMID,
)
from tests.support.firewall import firewall_admin

MAC = re.compile(r"^virtio=(?:[0-9A-F]{2}:){5}[0-9A-F]{2},")
GiB = 1024**3


class Api:
    """A thin client for one token against a served fake."""

    def __init__(self, served, token=None):
        token_id, secret = token or served.seeded.provision_token
        self.base = f"{served.url}/api2/json"
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"PVEAPIToken={token_id}={secret}"
        self.cafile = served.cafile

    def call(self, method, path, **data):
        answer = self.session.request(
            method, self.base + path, data=data or None, verify=self.cafile, timeout=10
        )
        return answer.status_code, answer.json()

    def ok(self, method, path, **data):
        status, body = self.call(method, path, **data)
        assert status == 200, body
        return body["data"]

    def task(self, node, upid):
        """The task's exit status once it stopped."""
        for _ in range(200):
            status = self.ok("GET", f"/nodes/{node}/tasks/{upid}/status")
            if status["status"] == "stopped":
                return status["exitstatus"]
            time.sleep(0.01)
        raise AssertionError(f"task {upid} did not stop")


def _vm(served, vmid=ROUTER_VMID):
    return served.pve.vm(vmid)


def _resize(api, disk, size, vmid=ROUTER_VMID, node=ROUTER_NODE, **extra):
    upid = api.ok("PUT", f"/nodes/{node}/qemu/{vmid}/resize", disk=disk, size=size, **extra)
    assert upid.startswith(f"UPID:{node}:") and ":resize:" in upid, "PVE 8/9 resize_vm forks a task"
    return api.task(node, upid)


# ------------------------------------------------------------------------------------------ resize


def test_plain_fakepve_resize_changes_nothing(fakepve, fakepve_cafile):
    """Why QemuPve has a resize route: fakepve 0.5.0 answers it from the schema and stores nothing."""
    fakepve.apitokens["root@pam!probe"] = "s3cret-for-a-plain-fake"
    vm = fakepve.add_vm(301, "probe", config={"scsi0": "local-lvm:vm-301-disk-0,size=8G"})
    answer = requests.put(
        f"{fakepve.url}/api2/json/nodes/pve1/qemu/301/resize",
        data={"disk": "scsi0", "size": "+2G"},
        headers={"Authorization": "PVEAPIToken=root@pam!probe=s3cret-for-a-plain-fake"},
        verify=fakepve_cafile,
        timeout=10,
    )
    assert answer.status_code == 200
    assert vm.config["scsi0"] == "local-lvm:vm-301-disk-0,size=8G"


def test_resize_grows_relative_and_absolute_and_records_the_size(fresh_cluster):
    """qemu-server resize_vm: ``+N`` adds to the volume's size, ``N`` sets it; the drive's ``size=`` is
    rewritten by print_drive (pve-common format_size)."""
    api = Api(fresh_cluster)
    assert _resize(api, "scsi0", "+2G") == "OK"
    assert _vm(fresh_cluster).config["scsi0"] == "local-lvm:vm-300-disk-0,iothread=1,size=10G"
    assert _resize(api, "scsi0", "12G") == "OK"
    assert _vm(fresh_cluster).config["scsi0"].endswith(",size=12G")
    assert _resize(api, "scsi0", "12288M") == "OK", "the same size: nothing to do, no error"
    assert fresh_cluster.pve.resized == [(ROUTER_VMID, "scsi0", 10 * GiB), (ROUTER_VMID, "scsi0", 12 * GiB)]


def test_resize_refuses_a_shrink_as_the_task_error(fresh_cluster):
    """resize_vm's worker: ``die "shrinking disks is not supported\\n"`` — the request itself succeeds."""
    api = Api(fresh_cluster)
    assert _resize(api, "scsi0", "4G") == "shrinking disks is not supported"
    assert _vm(fresh_cluster).config["scsi0"].endswith(",size=8G")


def test_resize_refusals_of_the_worker(fresh_cluster):
    """resize_vm: a missing disk, a CD-ROM, a stale digest and a config lock end the task with PVE's
    message and change nothing."""
    api = Api(fresh_cluster)
    vm = _vm(fresh_cluster)
    vm.config["ide2"] = f"{ISO},media=cdrom"
    before = dict(vm.config)
    assert _resize(api, "scsi5", "+1G") == "disk 'scsi5' does not exist"
    assert _resize(api, "ide2", "+1G") == "you can't resize a cdrom"
    assert _resize(api, "scsi0", "+1G", digest="0" * 40) == "checksum mismatch (file change by other user?)"
    vm.lock = "backup"
    assert _resize(api, "scsi0", "+1G") == "VM is locked (backup)"
    vm.lock = None
    assert vm.config == before


def test_resize_needs_vm_config_disk_and_root_for_skiplock(fresh_cluster):
    """resize_vm's permissions: VM.Config.Disk on /vms/{vmid}; skiplock only for root@pam."""
    reader = Api(fresh_cluster, fresh_cluster.seeded.read_token)
    status, body = reader.call(
        "PUT", f"/nodes/{ROUTER_NODE}/qemu/{ROUTER_VMID}/resize", disk="scsi0", size="+1G"
    )
    assert status == 403 and "VM.Config.Disk" in body["message"]
    api = Api(fresh_cluster)
    status, body = api.call(
        "PUT", f"/nodes/{ROUTER_NODE}/qemu/{ROUTER_VMID}/resize", disk="scsi0", size="+1G", skiplock=1
    )
    assert status == 400 and body["errors"] == {"skiplock": "Only root may use this option."}
    assert _vm(fresh_cluster).config["scsi0"].endswith(",size=8G")


def test_resize_updates_the_storage_volume(fresh_cluster):
    """The grown volume is what the storage lists (PVE::Storage::volume_resize)."""
    api = Api(fresh_cluster)
    upid = api.ok(
        "POST",
        f"/nodes/{CLOUD_TEMPLATE_NODE}/qemu/{CLOUD_TEMPLATE_VMID}/clone",
        newid=310,
        name="grown",
        full=1,
    )
    assert api.task(CLOUD_TEMPLATE_NODE, upid) == "OK"
    assert _resize(api, "scsi0", "+5G", vmid=310, node=CLOUD_TEMPLATE_NODE) == "OK"
    listed = api.ok("GET", f"/nodes/{CLOUD_TEMPLATE_NODE}/storage/local-lvm/content", vmid=310)
    sizes = {row["volid"]: row["size"] for row in listed}
    assert sizes["local-lvm:vm-310-disk-0"] == 8 * GiB


# ------------------------------------------------------------------------------------ config read


def test_config_merges_pending_unless_current(fresh_cluster):
    """qemu-server vm_config over AbstractConfig::load_current_config: pending values replace current
    ones and pending deletes remove keys, unless ``current=1``."""
    api = Api(fresh_cluster)
    path = f"/nodes/{ROUTER_NODE}/qemu/{ROUTER_VMID}/config"
    api.ok("PUT", path, cores=4, delete="ostype")  # the VM runs: neither is hot-pluggable
    merged = api.ok("GET", path)
    current = api.ok("GET", path, current=1)
    assert (merged["cores"], "ostype" in merged) == (4, False)
    assert (current["cores"], "ostype" in current) == (2, True)
    assert merged["digest"] == current["digest"]
    status, body = api.call("GET", path, current=1, snapshot="before")
    assert status == 400 and set(body["errors"]) == {"snapshot", "current"}


def test_plain_fakepve_config_shows_current_values(fakepve, fakepve_cafile):
    """Why QemuPve reads config itself: fakepve 0.5.0 leaves pending changes out of GET …/config."""
    fakepve.apitokens["root@pam!probe"] = "s3cret-for-a-plain-fake"
    fakepve.add_vm(301, "probe", status="running", config={"cores": 2}, pending={"cores": 4})
    answer = requests.get(
        f"{fakepve.url}/api2/json/nodes/pve1/qemu/301/config",
        headers={"Authorization": "PVEAPIToken=root@pam!probe=s3cret-for-a-plain-fake"},
        verify=fakepve_cafile,
        timeout=10,
    )
    assert answer.json()["data"]["cores"] == 2


def test_a_running_vm_takes_what_its_hotplug_allows_and_keeps_the_rest_pending(fresh_cluster):
    """qemu-server vmconfig_hotplug_pending on a running VM: fast-plug and cloud-init keys, NICs and
    SCSI disks (default hotplug network,disk,usb) apply at once; cores, memory and an IDE disk wait.
    With hotplug 0 a NIC's bridge or tag still changes live (vmconfig_update_net), its model does not."""
    api = Api(fresh_cluster)
    path = f"/nodes/{ROUTER_NODE}/qemu/{ROUTER_VMID}/config"
    vm = _vm(fresh_cluster)
    api.ok(
        "PUT",
        path,
        ciuser="ops",
        net1="virtio=BC:24:11:3A:00:02,bridge=vmbr2",
        net2="virtio,bridge=vmbr0",
        scsi1="local-lvm:4",
        ide1="local-lvm:4",
        cores=4,
        memory=2048,
    )
    assert set(vm.pending) == {"ide1", "cores", "memory"}
    assert vm.config["ciuser"] == "ops" and vm.config["net1"].endswith("bridge=vmbr2")
    assert {"net2", "scsi1"} <= set(vm.config)
    api.ok("PUT", path, delete="net2")
    assert "net2" not in vm.config and "net2" not in vm.pending, "a NIC is unplugged at once"

    vm.config["hotplug"] = "0"
    api.ok(
        "PUT",
        path,
        net0="virtio=BC:24:11:3A:00:01,bridge=vmbr0,tag=20",
        net1="e1000=BC:24:11:3A:00:02,bridge=vmbr2",
    )
    assert vm.config["net0"].endswith(",tag=20"), "a tag changes without hotplug"
    assert vm.pending["net1"].startswith("e1000="), "a new model needs the NIC replugged"


def test_cipassword_is_masked_and_stored_hashed_not_pending(fresh_cluster):
    """vm_config and vm_pending print ``**********`` for cipassword; update_vm_api writes it into the
    config at once (never pending, even on a running VM), hashed with encrypt_pw."""
    api = Api(fresh_cluster)
    path = f"/nodes/{ROUTER_NODE}/qemu/{ROUTER_VMID}/config"
    api.ok("PUT", path, cipassword="hunter2-not-shown")
    vm = _vm(fresh_cluster)
    assert vm.config["cipassword"].startswith("$5$") and "hunter2" not in vm.config["cipassword"]
    assert "cipassword" not in vm.pending
    assert api.ok("GET", path)["cipassword"] == "**********"
    pending = {row["key"]: row for row in api.ok("GET", f"/nodes/{ROUTER_NODE}/qemu/{ROUTER_VMID}/pending")}
    assert pending["cipassword"]["value"] == "**********"
    assert pending["digest"]["value"] == api.ok("GET", path)["digest"], "config_with_pending_array lists it"


def test_create_stores_cipassword_as_sent_and_a_config_write_hashes_it(fresh_cluster):
    """qemu-server ``API2/Qemu.pm``: ``create_vm`` writes its form (``$conf = $param``) with
    ``write_config``, ``cipassword`` in clear; only ``update_vm_api`` runs ``PVE::Tools::encrypt_pw``
    on it (unless it already is a crypt hash, or the ostype is Windows)."""
    api = Api(fresh_cluster)
    upid = api.ok("POST", "/nodes/pve1/qemu", vmid=315, name="pw-test", cipassword="plain-at-create")
    assert api.task("pve1", upid) == "OK"
    assert _vm(fresh_cluster, 315).config["cipassword"] == "plain-at-create", "create_vm keeps it as sent"
    api.ok("PUT", "/nodes/pve1/qemu/315/config", cipassword="plain-on-update")
    stored = _vm(fresh_cluster, 315).config["cipassword"]
    assert stored.startswith("$5$") and "plain-on-update" not in stored, "update_vm_api hashes it"
    api.ok("PUT", "/nodes/pve1/qemu/315/config", ostype="win11")
    api.ok("PUT", "/nodes/pve1/qemu/315/config", cipassword="windows-keeps-it")
    assert _vm(fresh_cluster, 315).config["cipassword"] == "windows-keeps-it", "windows_version: as sent"


def test_clone_refuses_local_storage_to_another_node_and_a_linked_clone_storage_cannot_make(fresh_cluster):
    """qemu-server ``clone_vm``: ``$check_storage_access_clone`` then ``can't clone VM to node '<node>'
    (VM uses local storage)``; per disk, ``volume_has_feature(..., 'clone', ...)`` (pve-storage
    ``LVMPlugin`` has none): ``Linked clone feature is not supported for '<volid>' (<key>)``."""
    api = Api(fresh_cluster)
    path = f"/nodes/{CLOUD_TEMPLATE_NODE}/qemu/{CLOUD_TEMPLATE_VMID}/clone"
    status, body = api.call("POST", path, newid=161, target="pve2")
    assert status == 500 and "can't clone VM to node 'pve2' (VM uses local storage)" in str(body)
    fresh_cluster.pve.storages["local-lvm"]["type"] = "lvm"
    status, body = api.call("POST", path, newid=161)
    assert (
        status == 500
        and "Linked clone feature is not supported for 'local-lvm:base-9000-disk-0' (scsi0)" in (str(body))
    )
    assert fresh_cluster.pve.vm(161) is None


def test_a_linked_clone_of_a_volume_that_is_no_base_volume_fails_as_on_pve(fresh_cluster):
    """pve-storage ``Plugin.pm`` ``parse_volname`` of a linked clone's own disk
    (``<M>/base-M-…/<N>/vm-N-….qcow2``) gives ``$isBase`` of ``vm-N-…``: ``volume_has_feature``
    'clone' fails, and ``clone_vm`` dies ``Linked clone feature is not supported for '<volid>'
    (<key>)``. Plain fakepve clones it (``'base-' in volume``)."""
    api = Api(fresh_cluster)
    fresh_cluster.pve.storages["local"]["content"] += ",images"
    own = "local:8000/base-8000-disk-0.qcow2/9000/vm-9000-disk-0.qcow2"
    fresh_cluster.pve.vm(CLOUD_TEMPLATE_VMID).config["scsi0"] = f"{own},size=3G"
    path = f"/nodes/{CLOUD_TEMPLATE_NODE}/qemu/{CLOUD_TEMPLATE_VMID}/clone"
    status, body = api.call("POST", path, newid=162)
    assert status == 500 and f"Linked clone feature is not supported for '{own}' (scsi0)" in str(body)
    assert fresh_cluster.pve.vm(162) is None


# ----------------------------------------------------------------------------------- config write


def test_put_stores_numbers_macs_and_unique_tags_as_pve(fresh_cluster):
    """update_vm_api: integer and boolean keys read back as numbers (parse_vm_config's check_type); a new
    netN gets a MAC (parse_net, print_net: model=MAC first); tags pass get_unique_tags."""
    api = Api(fresh_cluster)
    path = f"/nodes/{CLOUD_TEMPLATE_NODE}/qemu/{CLOUD_TEMPLATE_VMID}/config"
    api.ok("PUT", path, cores="3", onboot="1", net1="virtio,firewall=1,bridge=vmbr1", tags="Web;db;web")
    config = api.ok("GET", path)
    assert (config["cores"], config["onboot"]) == (3, 1)
    assert MAC.match(config["net1"]) and config["net1"].endswith(",bridge=vmbr1,firewall=1")
    assert config["tags"] == "db;web"
    assert config["memory"] == "2048", "PVE 9 spells memory as a property string"


def test_tags_keep_config_order_when_the_tag_style_says_so(fresh_cluster):
    """get_unique_tags: ``ordering: config`` keeps the written order; ``case-sensitive`` keeps case."""
    fresh_cluster.pve.datacenter["tag-style"] = {"ordering": "config", "case-sensitive": 1}
    api = Api(fresh_cluster)
    path = f"/nodes/{CLOUD_TEMPLATE_NODE}/qemu/{CLOUD_TEMPLATE_VMID}/config"
    api.ok("PUT", path, tags="Web;db;Web")
    assert api.ok("GET", path)["tags"] == "Web;db"


def test_cloudinit_drive_is_named_for_its_vm_at_create_and_on_a_write(fresh_cluster):
    """create_disks: ``<storage>:cloudinit`` allocates ``vm-<vmid>-cloudinit`` (``.qcow2`` in
    ``<vmid>/`` on a storage with a path), 4 MiB, ``media=cdrom`` — at create and on a config write."""
    api = Api(fresh_cluster)
    upid = api.ok("POST", "/nodes/pve1/qemu", vmid=314, name="ci-test", ide0="local-lvm:cloudinit")
    assert api.task("pve1", upid) == "OK"
    assert api.ok("GET", "/nodes/pve1/qemu/314/config")["ide0"] == "local-lvm:vm-314-cloudinit,media=cdrom"
    fresh_cluster.pve.storages["local"]["content"] += ",images"
    api.ok("PUT", "/nodes/pve1/qemu/314/config", ide1="local:cloudinit")
    assert (
        api.ok("GET", "/nodes/pve1/qemu/314/config")["ide1"] == "local:314/vm-314-cloudinit.qcow2,media=cdrom"
    )
    assert fresh_cluster.pve.storages["local"]["volumes"]["314/vm-314-cloudinit.qcow2"]["size"] == 4 * 1024**2


def test_a_config_write_allocates_a_new_disk_and_frees_it_when_the_write_fails(fresh_cluster):
    """update_vm_api runs create_disks: ``storage:GiB`` on a write becomes a new volume with its size
    (fakepve stores ``local-lvm:20`` as text); a write refused after the allocation frees it
    (create_disks frees its volumes on error)."""
    api = Api(fresh_cluster)
    path = f"/nodes/{ROUTER_NODE}/qemu/{ROUTER_VMID}/config"
    api.ok("PUT", path, scsi1="local-lvm:20,discard=on")
    # VM 300 runs with the default hotplug (network,disk,usb): the SCSI disk is plugged in at once.
    assert api.ok("GET", path)["scsi1"] == "local-lvm:vm-300-disk-1,discard=on,size=20G"
    volumes = fresh_cluster.pve.storages["local-lvm"]["volumes"]
    assert volumes["vm-300-disk-1"]["size"] == 20 * GiB
    status, body = api.call("PUT", path, scsi2="local-lvm:5", digest="0" * 40)
    assert status == 500 and "checksum mismatch" in body["message"]
    assert "vm-300-disk-2" not in volumes and "scsi2" not in api.ok("GET", path)


# ------------------------------------------------------------------------------------------- seed


def test_seeded_template_clones_with_its_own_cloudinit_drive_and_a_new_mac(fresh_cluster):
    """The seeded template 9000 clones (clone_vm): a new MAC, a new smbios1 uuid, the disk copied and
    the cloud-init drive full-cloned as ``vm-<newid>-cloudinit``; the template keeps its own."""
    api = Api(fresh_cluster)
    template = api.ok("GET", f"/nodes/{CLOUD_TEMPLATE_NODE}/qemu/{CLOUD_TEMPLATE_VMID}/config")
    assert template["template"] == 1 and template["ide2"] == CLOUD_TEMPLATE_CONFIG["ide2"]
    upid = api.ok(
        "POST", f"/nodes/{CLOUD_TEMPLATE_NODE}/qemu/{CLOUD_TEMPLATE_VMID}/clone", newid=311, name="c1"
    )
    assert api.task(CLOUD_TEMPLATE_NODE, upid) == "OK"
    clone = api.ok("GET", f"/nodes/{CLOUD_TEMPLATE_NODE}/qemu/311/config")
    assert clone["ide2"] == "local-lvm:vm-311-cloudinit,media=cdrom"
    assert clone["net0"] != template["net0"] and MAC.match(clone["net0"])
    assert clone["smbios1"] != template["smbios1"]
    assert clone["scsi0"].startswith("local-lvm:vm-311-disk-0,") and clone["scsi0"].endswith(",size=3G")
    assert "template" not in clone
    upid = api.ok("DELETE", f"/nodes/{CLOUD_TEMPLATE_NODE}/qemu/311")
    assert api.task(CLOUD_TEMPLATE_NODE, upid) == "OK"
    volumes = fresh_cluster.pve.storages["local-lvm"]["volumes"]
    assert f"vm-{CLOUD_TEMPLATE_VMID}-cloudinit" in volumes and "vm-311-cloudinit" not in volumes


def test_a_clone_gets_its_template_s_firewall(fresh_cluster):
    """qemu-server ``API2/Qemu.pm`` ``clone_vm`` copies the source's firewall to the clone
    (``PVE::Firewall::clone_vmfw_conf``: ``<newid>.fw`` becomes a copy of ``<vmid>.fw``); a later change
    of one is not the other's."""
    admin = firewall_admin(fresh_cluster)
    template = f"nodes/{CLOUD_TEMPLATE_NODE}/qemu/{CLOUD_TEMPLATE_VMID}/firewall"
    admin("POST", f"{template}/ipset", name="admins")
    admin("POST", f"{template}/ipset/admins", cidr="192.0.2.0/24")
    admin("PUT", f"{template}/options", enable="1")
    api = Api(fresh_cluster)
    upid = api.ok(
        "POST", f"/nodes/{CLOUD_TEMPLATE_NODE}/qemu/{CLOUD_TEMPLATE_VMID}/clone", newid=314, name="c2"
    )
    assert api.task(CLOUD_TEMPLATE_NODE, upid) == "OK"
    copied = fresh_cluster.pve.firewall_config("vm", CLOUD_TEMPLATE_NODE, 314)
    assert copied["ipset"]["admins"] == [{"cidr": "192.0.2.0/24"}] and copied["options"]["enable"] == 1
    admin("POST", f"nodes/{CLOUD_TEMPLATE_NODE}/qemu/314/firewall/ipset/admins", cidr="198.51.100.0/24")
    original = fresh_cluster.pve.firewall_config("vm", CLOUD_TEMPLATE_NODE, CLOUD_TEMPLATE_VMID)
    assert original["ipset"]["admins"] == [{"cidr": "192.0.2.0/24"}]


@pytest.mark.parametrize("drive", ["ide2", "sata1"])
def test_seeded_iso_mounts_as_a_cdrom(fresh_cluster, drive):
    """The seeded ISO on ``local`` is a CD-ROM a new VM may use (check_storage_access: iso content needs
    ``media=cdrom``); create_disks records the ISO's size on the drive."""
    api = Api(fresh_cluster)
    upid = api.ok(
        "POST",
        "/nodes/pve1/qemu",
        vmid=312,
        name="installer",
        scsi0="local-lvm:8",
        **{drive: f"{ISO},media=cdrom"},
    )
    assert api.task("pve1", upid) == "OK"
    assert api.ok("GET", "/nodes/pve1/qemu/312/config")[drive] == f"{ISO},media=cdrom,size=754M"
    status, body = api.call("POST", "/nodes/pve1/qemu", vmid=313, **{drive: ISO})
    assert status == 400 and body["errors"] == {drive: "explicit 'media=cdrom' is required for iso images"}


def test_a_failed_hot_plug_is_written_pending_first_then_raised_by_put_and_by_the_post_task(fresh_cluster):
    """qemu-server ``API2/Qemu.pm`` ``update_vm_api`` writes each value into ``[PENDING]``
    (``write_config`` per key), then on a running VM ``vmconfig_hotplug_pending`` applies what it can
    (``$fast_plug_option`` keys first) and records each failure (``hotplug problem - <error>``), leaving
    that value pending; ``update_vm_api`` raises them after (``raise_param_exc``). The ``PUT`` answers
    400 with the key's error; the ``POST`` task (``update_vm_async``) ends with the exception as
    ``fork_worker`` prints it (pve-common ``Exception.pm`` ``stringify``)."""
    api = Api(fresh_cluster)
    served = _vm(fresh_cluster)
    assert served.status == "running"
    fresh_cluster.pve.hotplug_errors[ROUTER_VMID] = {"net2": "unable to hotplug net2"}
    path = f"/nodes/{ROUTER_NODE}/qemu/{ROUTER_VMID}/config"
    status, body = api.call("PUT", path, net2="virtio,bridge=vmbr0", description="hot-plug probe")
    assert status == 400 and body["errors"] == {"net2": "hotplug problem - unable to hotplug net2"}, body
    assert served.pending["net2"].startswith("virtio=") and "net2" not in served.config
    assert served.config["description"] == "hot-plug probe", "the fast-plug key went through"
    fresh_cluster.pve.hotplug_errors[ROUTER_VMID]["net3"] = "unable to hotplug net3"
    upid = api.ok("POST", path, net3="virtio,bridge=vmbr0")
    assert ":qmconfig:" in upid
    exit_status = api.task(ROUTER_NODE, upid)
    assert exit_status == "400 Parameter verification failed. net3: hotplug problem - unable to hotplug net3"
    assert served.pending["net3"].startswith("virtio=") and "net3" not in served.config
