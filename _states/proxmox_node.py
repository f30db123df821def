"""State module ``proxmox_node``: a Proxmox VE node's own settings, one object per node and kind.

.. code-block:: yaml

    pve1-apt:
      proxmox_node.apt_repository:
        - name: pve1                   # the node
        - adopt: true                  # the node's repositories are live: take them over
        - repositories:
          - handle: no-subscription    # a standard repository (PVE 8 and 9 differ: proxmox-apt)
          - path: /etc/apt/sources.list.d/pve-enterprise.sources
            index: 0                   # the entry's place in its file, from 0
            enabled: false

    pve2-apt:
      proxmox_node.apt_repository_absent:
        - name: pve2
        - removal: retain              # default: forget it; destroy: disable the entries it enabled

Only the declared entries are compared; no upgrade and no ``apt update`` is ever run. The logic lives
in ``salt_proxmox.node.apt`` behind the ``proxmox`` execution module."""

__virtualname__ = "proxmox_node"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def apt_repository(name, repositories=None, target=None, adopt=False, **kwargs):
    """Ensure node ``name``'s declared APT repository entries are enabled or disabled as declared. Under
    ``test=True`` nothing is written."""
    return __salt__["proxmox.run_state"](globals(), "apt_repository", locals())


def apt_repository_absent(name, target=None, removal="retain", **kwargs):
    """Stop managing node ``name``'s APT repositories: ``removal: retain`` (default) forgets them;
    ``removal: destroy`` disables
    the entries this minion's last declaration enabled, when it still matches."""
    return __salt__["proxmox.run_state"](globals(), "apt_repository_absent", locals())
