"""A FakePve that keeps storage replication jobs, as pve-manager and pve-guest-common do.

fakepve 0.5.0 checks the ``/cluster/replication`` requests against PVE 9's schema, then answers them with a
generic handler that stores nothing. ``ReplicationPve`` adds stateful routes in front of it (the
``_routes_*`` mechanism), written from pve-manager ``PVE/API2/ReplicationConfig.pm`` (``index``, ``read``,
``create``, ``update``, ``delete``) over pve-guest-common ``src/PVE/ReplicationConfig.pm`` (the section
config of ``replication.cfg``: ``parse_replication_job_id``, ``write_config``'s one job per guest and
target, the ``local`` type whose ``target`` is fixed), pve-container ``src/PVE/LXC/Config.pm`` and
qemu-server ``src/PVE/QemuConfig.pm`` ``get_replicatable_volumes``, and pve-storage
``ZFSPoolPlugin.pm`` ``volume_has_feature`` (only a ``zfspool`` volume can replicate):

- ``replication_jobs``: the sections by id, each ``{type: local, target, guest, jobnum, source, <options
  as sent>}``, ``rate`` as a number and ``disable`` as 0/1 (``check_value``);
- ``GET /cluster/replication`` is ``index`` (each job with its ``id``, those whose guest the caller may
  audit); ``GET …/{id}`` is ``read`` with the file's ``digest``, or 500 ``no such replication job '<id>'``;
- ``POST /cluster/replication`` is ``create``: VM.Replicate on ``/vms/<guest>`` (PVE 8: Datastore.Allocate
  on ``/storage``, as every write); ``Guest '<vmid>' does not
  exist.``, ``Target '<node>' does not exist.``, ``Source '<source>' does not match current node of guest
  …``, ``Source and target must not be identical``, the guest's volumes (``missing replicate feature on
  volume '<volid>'``, ``unable to replicate mountpoint type '<type>'``, ``No replicatable volumes found``),
  ``replication job '<id>' already exists``, ``replication job for guest '<vmid>' to target
  'local/<node>' already exists``; the id is kept as sent, as ``create`` keeps it;
- ``PUT …/{id}`` is ``update``: the digest (``assert_if_modified``), ``no such job '<id>'``, the options
  sent, then ``delete`` (``no such option``, ``unable to delete required option``, ``unable to delete
  fixed option``); ``target`` is not in its schema (fixed), so fakepve refuses it as PVE does;
- ``DELETE …/{id}`` is ``delete``: the job is only marked, ``remove_job`` ``full`` (``local`` with
  ``keep``), and stays in the file until the replication runner removes it (``run_replication``: pve-guest-
  common ``PVE/Replication.pm`` ``run_replication_nolock`` removes a marked job with ``delete_job``);
  ``force`` removes the section at once.

Differences from PVE: the runner does not run by itself (PVE's pvescheduler runs it every minute): a test
calls ``run_replication``; no snapshot is taken or sent; ``schedule`` is stored without the
``pve-calendar-event`` check; a volume's owner is read from its name only; the error texts are the die
messages of the code, without the cfs lock's wrapping; the digest is one hash of the sections.
"""

from __future__ import annotations

import hashlib
import json
import re

from fakepve.model import PveError
from fakepve.routing import check_digest, die, param_error, split_list

from tests.support.ceph import CephPve

#: ``ReplicationConfig::Cluster->options``: the keys a ``local`` job takes, beside ``type``.
OPTIONS = {"target", "disable", "comment", "rate", "schedule", "remove_job", "source"}
#: pve-storage ``Plugin.pm`` ``@SHARED_STORAGE``: skipped by ``get_replicatable_volumes``.
SHARED = {"iscsi", "nfs", "cifs", "rbd", "cephfs", "iscsidirect", "zfs", "drbd", "pbs"}
_VOLUME_KEY = re.compile(r"^(?:ide|sata|scsi|virtio|mp|unused)\d+$|^(?:rootfs|efidisk0|tpmstate0)$")
_OWNER = re.compile(r"(?:^|/)(?:vm|subvol|base|basevol)-(\d+)-[^/]*$")


class ReplicationPve(CephPve):
    """CephPve with stateful replication jobs (see the module docstring)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.replication_jobs: dict[str, dict] = {}

    # ---------------------------------------------------------------------------------- scenarios

    def add_replication_job(self, job_id: str, target: str, **options) -> dict:
        """A job made outside this product (by hand in the GUI), ``options`` as stored; ``source`` is
        the guest's node unless given."""
        guest, _, jobnum = job_id.partition("-")
        found = self.guest(int(guest))
        section = {"type": "local", "target": target, "guest": int(guest), "jobnum": int(jobnum)}
        if found is not None:
            section["source"] = found.node
        self.replication_jobs[job_id] = {**section, **options}
        return self.replication_jobs[job_id]

    def run_replication(self) -> list[str]:
        """The replication runner's pass (pvescheduler, every minute): each job marked ``remove_job`` is
        removed (``Replication.pm`` ``run_replication_nolock``, then ``ReplicationConfig::delete_job``).
        Returns the ids removed."""
        gone = sorted(jid for jid, job in self.replication_jobs.items() if job.get("remove_job"))
        for jid in gone:
            del self.replication_jobs[jid]
        return gone

    def replication_digest(self) -> str:
        text = json.dumps(self.replication_jobs, sort_keys=True)
        return hashlib.sha1(text.encode()).hexdigest()  # noqa: S324 - as PVE's SectionConfig digest

    # ------------------------------------------------------------------------------------- routes

    def _routes_replication(self):
        jobs, job = "/cluster/replication", "/cluster/replication/{id}"
        return [
            ("GET", jobs, self._replication_index),
            ("POST", jobs, self._replication_create),
            ("GET", job, self._replication_read),
            ("PUT", job, self._replication_update),
            ("DELETE", job, self._replication_delete),
        ]

    def _replication_may(self, user, vmid: int, priv: str) -> None:
        """``$rpcenv->check`` on ``/vms/<vmid>``; a write (VM.Replicate, PVE 9) on PVE 8 is
        Datastore.Allocate on ``/storage`` instead (``stable-8`` ``permissions``)."""
        path = f"/vms/{vmid}"
        if priv == "VM.Replicate" and int(str(self.release_version).split(".")[0]) < 9:
            path, priv = "/storage", "Datastore.Allocate"
        if not self.allowed(user, path, priv):
            raise PveError(403, f"Permission check failed ({path}, {priv})")

    async def _replication_index(self, v, user):
        return [
            {**job, "id": jid}
            for jid, job in sorted(self.replication_jobs.items())
            if self.allowed(user, f"/vms/{job['guest']}", "VM.Audit")
        ]

    async def _replication_read(self, v, user):
        job = self.replication_jobs.get(v["id"])
        if job is None:
            raise die(f"no such replication job '{v['id']}'")
        self._replication_may(user, job["guest"], "VM.Audit")
        return {**job, "id": v["id"], "digest": self.replication_digest()}

    @staticmethod
    def _replication_checked(param: dict) -> dict:
        """``check_config``/``check_value``: the ``local`` type's options, no line feed, numbers."""
        settings = {}
        for key, value in param.items():
            if key not in OPTIONS:
                raise die(f"unexpected property '{key}'")
            if re.search(r"[\n\r]", str(value)):
                raise param_error(**{key: "property contains a line feed"})
            if key == "disable":
                value = 1 if str(value) in ("1", "true", "on", "yes") else 0
            elif key == "rate":
                value = float(value)
                value = int(value) if value.is_integer() else value
            settings[key] = value
        return settings

    def _replication_volumes(self, guest) -> str | None:
        """``get_replicatable_volumes`` at create (``$noerr`` 0): the die of the first volume that cannot
        replicate, or ``No replicatable volumes found``; None when one or more can."""
        is_vm = guest in self.vms
        found = 0
        for key, raw in sorted(guest.config.items()):
            if not _VOLUME_KEY.match(key) or not isinstance(raw, str):
                continue
            parts = raw.split(",")
            options = dict(part.split("=", 1) for part in parts[1:] if "=" in part)
            volume = parts[0].split("=", 1)[1] if "=" in parts[0] else parts[0]
            replicate = options.get("replicate", "1") not in ("0", "no", "off", "false")
            if is_vm and (options.get("media") == "cdrom" or volume in ("none", "cdrom")):
                continue
            if volume.startswith("/"):
                if not replicate:
                    continue
                if is_vm:
                    return f"unable to replicate local file/device '{volume}'"
                kind = "device" if volume.startswith("/dev/") else "bind"
                return f"unable to replicate mountpoint type '{kind}'"
            storage = volume.split(":", 1)[0]
            config = self.storages.get(storage, {})
            if config.get("type") in SHARED or str(config.get("shared", 0)) == "1":
                continue
            owner = _OWNER.search(volume.partition(":")[2])
            if owner is None or int(owner.group(1)) != guest.vmid or not replicate:
                continue
            if config.get("type") != "zfspool":
                return f"missing replicate feature on volume '{volume}'"
            found += 1
        return None if found else "No replicatable volumes found"

    async def _replication_create(self, v, user):
        param = {key: value for key, value in v.items() if value is not None}
        param.pop("type", None)
        jid = param.pop("id")
        guest_id = int(jid.partition("-")[0])
        self._replication_may(user, guest_id, "VM.Replicate")
        guest = self.guest(guest_id)
        if guest is None:
            raise die(f"Guest '{guest_id}' does not exist.")
        if param.get("target") not in self.nodes:
            raise die(f"Target '{param.get('target')}' does not exist.")
        source = guest.node
        if param.get("source") is not None and param["source"] != source:
            raise die(
                f"Source '{param['source']}' does not match current node of guest '{guest_id}' ({source})"
            )
        param.setdefault("source", source)
        if param["target"] == source:
            raise die("Source and target must not be identical")
        refusal = self._replication_volumes(guest)
        if refusal:
            raise die(refusal)
        if jid in self.replication_jobs:
            raise die(f"replication job '{jid}' already exists")
        for job in self.replication_jobs.values():
            if job["guest"] == guest_id and job["target"] == param["target"]:
                raise die(
                    f"replication job for guest '{guest_id}' to target 'local/{param['target']}' "
                    "already exists"
                )
        settings = self._replication_checked(param)
        self.replication_jobs[jid] = {
            "type": "local",
            "guest": guest_id,
            "jobnum": int(jid.partition("-")[2]),
            **settings,
        }
        return None

    async def _replication_update(self, v, user):
        param = {key: value for key, value in v.items() if value is not None}
        jid = param.pop("id")
        digest = param.pop("digest", None)
        delete = split_list(param.pop("delete", ""))
        self._replication_may(user, int(jid.partition("-")[0]), "VM.Replicate")
        check_digest(self.replication_digest(), digest)
        job = self.replication_jobs.get(jid)
        if job is None:
            raise die(f"no such job '{jid}'")
        data = {**job, **self._replication_checked(param)}
        for key in delete:
            if key not in OPTIONS:
                raise die(f"no such option '{key}'")
            if key == "target":
                raise die(f"unable to delete required option '{key}'")
            data.pop(key, None)
        self.replication_jobs[jid] = data
        return None

    async def _replication_delete(self, v, user):
        jid = v["id"]
        self._replication_may(user, int(jid.partition("-")[0]), "VM.Replicate")
        keep = str(v.get("keep") or "0") in ("1", "true")
        if str(v.get("force") or "0") in ("1", "true"):
            if keep:
                raise param_error(keep="conflicts with parameter 'force'")
            self.replication_jobs.pop(jid, None)
            return None
        job = self.replication_jobs.get(jid)
        if job is None:
            raise die(f"no such job '{jid}'")
        job["remove_job"] = "local" if keep else "full"
        return None
