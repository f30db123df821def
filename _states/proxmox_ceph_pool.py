"""State module ``proxmox_ceph_pool``: pools of the Ceph cluster PVE manages.

.. code-block:: yaml

    vm-disks:
      proxmox_ceph_pool.present:
        - node: pve1                   # the node whose API manages the pool
        - size: 3                      # replicas; min_size must not exceed it
        - min_size: 2
        - pg_autoscale_mode: "on"      # then pg_num is the create's only: the autoscaler moves it
        - pg_num: 32
        - application: rbd             # the create's: PVE cannot change it
        - crush_rule: replicated_rule  # optional; must exist
        - target_size_ratio: 0.5       # optional; pg_num_min, target_size too ('' or none clears)
        - target: homelab              # optional when one target is configured
        - adopt: false                 # true takes over a pool this minion did not create

    vm-ec:                             # erasure-coded: pools vm-ec-data, vm-ec-metadata, storage vm-ec
      proxmox_ceph_pool.present:
        - node: pve1
        - erasure_coding: {k: 2, m: 1, failure-domain: host}  # fixed once made
        - size: 3                      # size, min_size, crush_rule: the metadata pool's

    old-pool:
      proxmox_ceph_pool.absent:
        - node: pve1
        - removal: retain              # default: forget it; destroy: destroy it and its data

Nothing is written while Ceph reports HEALTH_ERR or degraded data; a destroy is refused while a
storage definition names the pool. The logic lives in ``salt_proxmox.ceph`` behind the ``proxmox``
execution module."""

__virtualname__ = "proxmox_ceph_pool"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def present(name, node=None, target=None, adopt=False, **kwargs):
    """Ensure Ceph pool ``name`` exists as declared. Under ``test=True`` nothing is written."""
    return __salt__["proxmox.run_state"](globals(), "present", locals())


def absent(name, node=None, target=None, removal="retain", **kwargs):
    """Stop managing Ceph pool ``name``: ``removal: retain`` (default) forgets it; ``removal: destroy``
    destroys it when this minion created it, it is unchanged and no storage names it.
    """
    return __salt__["proxmox.run_state"](globals(), "absent", locals())
