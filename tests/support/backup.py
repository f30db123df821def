"""A FakePve that keeps backup jobs, as pve-manager does.

fakepve 0.5.0 checks the ``/cluster/backup`` requests against PVE's schema and permissions, then answers
them with a generic handler that stores nothing. ``BackupPve`` adds stateful routes in front of it (the
``_routes_*`` mechanism), written from pve-manager ``PVE/API2/Backup.pm``:

- ``backup_jobs``: the vzdump jobs of ``jobs.cfg`` by id, each as ``JobBase->check_config`` keeps it
  (``type`` vzdump, the options as sent, ``prune-backups`` parsed into an object);
- ``GET /cluster/backup`` is ``index`` (every job with its ``id`` and a ``next-run``);
  ``GET /cluster/backup/{id}`` is ``read_job`` (400 ``errors.id`` ``No such job '<id>'``);
- ``POST /cluster/backup`` is ``create_job``: ``schedule`` required (``neither 'starttime' nor
  'schedule' were set``), ``all`` set when ``exclude`` is given, ``vmid`` and ``all`` in conflict, a
  selection required, a ``pool`` that must exist (``check_pool_exist``), ``enabled`` 1 when not given,
  ``Job '<id>' already exists``;
- ``PUT /cluster/backup/{id}`` is ``update_job``: ``delete`` first (an option not vzdump's nor
  ``comment``/``repeat-missed``: ``unknown option``), then the options sent, then the selection rules
  (``vmid`` drops ``all``/``exclude``/``pool``, ``all`` drops ``vmid``/``pool``, ``pool`` the others),
  ``no options specified`` for an empty PUT;
- ``DELETE /cluster/backup/{id}`` is ``delete_job``.

No write carries a digest: PVE's schema for these calls has none, so fakepve refuses one as PVE does
(400 ``property is not defined in schema``). ``edit_job`` is another administrator's edit.

Differences from PVE: a ``schedule`` is stored without the ``pve-calendar-event`` check (PVE runs
proxmox-time's parser; ``tests/unit/test_backup_schedule.py`` pins that parser's rules), and
``next-run`` is a fixed number.
"""

from __future__ import annotations

import uuid

from fakepve.routing import die, param_error, split_list

from tests.support.ceph import CephPve

#: ``update_job``'s options a ``delete`` may name besides vzdump's own (``$deletable``).
DELETABLE = ("comment", "repeat-missed")
#: What ``index`` shows as ``next-run`` (PVE computes it from the schedule).
NEXT_RUN = 1_900_000_000


def _prune(text: object) -> object:
    """``parse_property_string('prune-backups', ...)``: an object of integers."""
    if not isinstance(text, str):
        return text
    found = {}
    for item in split_list(text):
        key, _, value = item.partition("=")
        found[key] = int(value)
    return found


class BackupPve(CephPve):
    """CephPve with stateful backup jobs (see the module docstring)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.backup_jobs: dict[str, dict] = {}

    # ---------------------------------------------------------------------------------- scenarios

    def add_backup_job(self, job_id: str, **options) -> dict:
        """A job made outside this product (``create_job``'s defaults under ``options``)."""
        job = {"type": "vzdump", "enabled": 1, **options}
        if "prune-backups" in job:
            job["prune-backups"] = _prune(job["prune-backups"])
        self.backup_jobs[job_id] = job
        return job

    def edit_job(self, job_id: str, **options) -> None:
        """Another administrator's edit of job ``job_id`` (``None`` removes an option)."""
        job = self.backup_jobs[job_id]
        for key, value in options.items():
            if value is None:
                job.pop(key, None)
            else:
                job[key] = _prune(value) if key == "prune-backups" else value

    # ------------------------------------------------------------------------------------- routes

    def _routes_backup_jobs(self):
        jobs, job = "/cluster/backup", "/cluster/backup/{id}"
        return [
            ("GET", jobs, self._backup_index),
            ("POST", jobs, self._backup_create),
            ("GET", job, self._backup_read),
            ("PUT", job, self._backup_update),
            ("DELETE", job, self._backup_delete),
        ]

    async def _backup_index(self, v, user):
        return [
            {**job, "id": job_id, "next-run": NEXT_RUN} for job_id, job in sorted(self.backup_jobs.items())
        ]

    def _job(self, job_id: str) -> dict:
        if job_id not in self.backup_jobs:
            raise param_error(id=f"No such job '{job_id}'")
        return self.backup_jobs[job_id]

    async def _backup_read(self, v, user):
        return {**self._job(v["id"]), "id": v["id"]}

    def _check_pool(self, param: dict) -> None:
        pool = param.get("pool")
        if pool and pool not in self.pools:
            raise die(f"pool '{pool}' does not exist")

    async def _backup_create(self, v, user):
        param = {key: value for key, value in v.items() if value is not None}
        self._check_pool(param)
        if "schedule" not in param:
            raise param_error(schedule="neither 'starttime' nor 'schedule' were set")
        param.setdefault("enabled", 1)
        if "exclude" in param:
            param["all"] = 1
        if param.get("all") and param.get("vmid"):
            raise param_error(all="option conflicts with option 'vmid'")
        if not param.get("all") and not param.get("vmid") and not param.get("pool"):
            raise param_error(vmid="property is missing")
        job_id = param.pop("id", None) or str(uuid.uuid4())
        if job_id in self.backup_jobs:
            raise die(f"Job '{job_id}' already exists")
        if "prune-backups" in param:
            param["prune-backups"] = _prune(param["prune-backups"])
        self.backup_jobs[job_id] = {"type": "vzdump", **param}
        return None

    async def _backup_update(self, v, user):
        param = {key: value for key, value in v.items() if value is not None and key != "id"}
        delete = split_list(param.pop("delete", ""))
        self._check_pool(param)
        job = dict(self._job(v["id"]))
        if not param and not delete:
            raise die("no options specified")
        for key in delete:
            if key not in self.schema_options() and key not in DELETABLE:
                raise param_error(delete=f"unknown option '{key}'")
            job.pop(key, None)
        if "prune-backups" in param:
            param["prune-backups"] = _prune(param["prune-backups"])
        job.update(param)
        if job.get("exclude") is not None and not job.get("pool"):
            job["all"] = 1
        if param.get("vmid") is not None:
            for key in ("all", "exclude", "pool"):
                job.pop(key, None)
        elif param.get("all"):
            job.pop("vmid", None)
            job.pop("pool", None)
        elif job.get("pool"):
            for key in ("vmid", "all", "exclude"):
                job.pop(key, None)
        if job.get("all") and job.get("vmid"):
            raise param_error(all="option conflicts with option 'vmid'")
        if not job.get("all") and not job.get("vmid") and not job.get("pool"):
            raise param_error(vmid="property is missing")
        self.backup_jobs[v["id"]] = job
        return None

    def schema_options(self) -> set[str]:
        """The vzdump options (``PVE::VZDump::option_exists``): the PUT schema's parameters."""
        from fakepve import schema as pve_schema

        method = pve_schema.load().paths["/cluster/backup/{id}"]["PUT"]
        return set(method.get("parameters", {}).get("properties", {})) - {"id", "delete"}

    async def _backup_delete(self, v, user):
        self._job(v["id"])
        del self.backup_jobs[v["id"]]
        return None
