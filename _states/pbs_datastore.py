"""State module ``pbs_datastore``: datastores of a Proxmox Backup Server (``proxmox:pbs_targets``).

.. code-block:: yaml

    store1:
      pbs_datastore.present:
        - target: backup1              # a proxmox:pbs_targets name (the only one when omitted)
        - path: /mnt/datastore/store1  # identity: fixed after create, as backend
        - comment: PVE backups
        - gc-schedule: daily
        - prune-schedule: daily        # with keep-*: the create's prune job (PBS refuses them on an update)
        - keep-last: 7
        - verify-new: true

    old-store:
      pbs_datastore.absent:
        - removal: destroy             # removes the configuration; the backups stay
        - destroy_data: false          # true: PBS deletes every backup in it too (the plan says so)

The logic lives in ``salt_proxmox.pbs`` behind the ``proxmox`` execution module."""

__virtualname__ = "pbs_datastore"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def present(name, target=None, adopt=False, **kwargs):
    """Ensure datastore ``name`` exists on the PBS target as declared. Under ``test=True`` nothing is
    written."""
    return __salt__["proxmox.run_state"](globals(), "present", locals())


def absent(name, target=None, removal="retain", destroy_data=False, **kwargs):
    """Stop managing datastore ``name``: ``removal: retain`` (default) forgets it; ``removal: destroy``
    removes its configuration when this minion created it and it is unchanged; ``destroy_data: true``
    its backups too."""
    return __salt__["proxmox.run_state"](globals(), "absent", locals())
