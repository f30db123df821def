"""State module ``proxmox_replication``: Proxmox VE storage replication jobs (``replication.cfg``).

.. code-block:: yaml

    120-0:                             # <vmid>-<jobnum>: the guest and the job's number
      proxmox_replication.present:
        - target_node: pve2            # fixed: another target is another job
        - schedule: "*/30"             # compared by meaning; PVE's default */15
        - rate: 50                     # MB/s; no limit when left out
        - comment: dns1 to pve2

    300-0:
      proxmox_replication.absent:
        - removal: destroy             # PVE marks it; its replication runner removes it on its next run

Every volume of the guest must be on a zfspool storage (or replicate=0), and the guest ours or declared
in the run. The logic lives in ``salt_proxmox.datacenter.replication`` behind the ``proxmox`` execution
module."""

__virtualname__ = "proxmox_replication"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def present(name, target=None, adopt=False, **kwargs):
    """Ensure replication job ``name`` (``<vmid>-<jobnum>``) is defined as declared; ``target`` is the
    ``proxmox:targets`` entry, the job's node ``target_node``. Under ``test=True`` nothing is written."""
    return __salt__["proxmox.run_state"](globals(), "present", locals())


def absent(name, target=None, removal="retain", **kwargs):
    """Stop managing replication job ``name``: ``removal: retain`` (default) forgets it; ``removal: destroy``
    marks it for removal when this minion created it and it is unchanged (PVE removes it on its next run)."""
    return __salt__["proxmox.run_state"](globals(), "absent", locals())
