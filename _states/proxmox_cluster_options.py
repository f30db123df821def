"""State module ``proxmox_cluster_options``: the Proxmox VE datacenter options (``datacenter.cfg``), one
object per cluster.

.. code-block:: yaml

    datacenter:                        # a label: the cluster (the target) is the identity
      proxmox_cluster_options.present:
        - keyboard: en-us
        - migration: type=insecure,network=10.10.0.0/24   # or a mapping of sub-keys
        - tag-style:
            ordering: config
            case-sensitive: 1
        - next-id: lower=1000,upper=9999
        - mac_prefix: null             # cleared: PVE's BC:24:11 (delete=mac_prefix)
        - secrets_pillar: proxmox:cluster_options:datacenter  # http_proxy, which may hold a password

    datacenter-gone:
      proxmox_cluster_options.absent:
        - removal: retain              # default: forget it; destroy: clear the keys this minion set

Only the declared keys are compared, by meaning; PVE's defaults are no drift. The logic lives in
``salt_proxmox.datacenter.options`` behind the ``proxmox`` execution module."""

__virtualname__ = "proxmox_cluster_options"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def present(name, target=None, adopt=False, secrets_pillar=None, **kwargs):
    """Ensure the cluster's ``datacenter.cfg`` holds the declared keys as declared (``name`` is a label).
    Under ``test=True`` nothing is written."""
    return __salt__["proxmox.run_state"](globals(), "present", locals())


def absent(name, target=None, removal="retain", **kwargs):
    """Stop managing the cluster's options: ``removal: retain`` (default) forgets them; ``removal: destroy``
    clears the keys this minion's last declaration set, when they are unchanged."""
    return __salt__["proxmox.run_state"](globals(), "absent", locals())
