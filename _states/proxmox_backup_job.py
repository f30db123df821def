"""State module ``proxmox_backup_job``: Proxmox VE backup jobs (vzdump jobs of ``jobs.cfg``, cluster-wide).

.. code-block:: yaml

    nightly:                           # the job id
      proxmox_backup_job.present:
        - schedule: '02:00'            # a calendar event, compared by meaning ('2:00' is the same)
        - storage: backups
        - vmid: [150, 210]             # or pool: <poolid>, or all: true with exclude: [...]
        - mode: snapshot
        - compress: zstd
        - prune-backups: keep-daily=7,keep-weekly=4
        - enabled: true
        - comment: Nightly
        - target: homelab              # optional when one target is configured
        - adopt: false                 # true takes over a job this minion did not create

    old-job:
      proxmox_backup_job.absent:
        - removal: retain              # default: forget it; destroy: delete the job (never a backup)

A guest the job names must exist or be declared by the run; an option the cluster's release does
not know is refused. The logic lives in ``salt_proxmox.backup`` behind the ``proxmox`` execution
module."""

__virtualname__ = "proxmox_backup_job"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def present(name, target=None, adopt=False, **kwargs):
    """Ensure backup job ``name`` exists as declared. Under ``test=True`` nothing is written."""
    return __salt__["proxmox.run_state"](globals(), "present", locals())


def absent(name, target=None, removal="retain", **kwargs):
    """Stop managing backup job ``name``: ``removal: retain`` (default) forgets it; ``removal: destroy``
    deletes the job when this minion created it and it is unchanged (its backups stay).
    """
    return __salt__["proxmox.run_state"](globals(), "absent", locals())
