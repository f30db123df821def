"""State module ``proxmox_network``: node network interfaces, staged, and their apply per node.

.. code-block:: yaml

    pve1-vmbr1:
      proxmox_network.interface:
        - name: vmbr1                  # the iface
        - node: pve1
        - type: bridge                 # bridge | bond | eth | vlan
        - bridge_ports: eno2           # a set: order and duplicates do not matter
        - bridge_vlan_aware: true
        - bridge_vids: 2-4094
        - autostart: true
        - comments: VM traffic
        - adopt: false                 # true takes over an interface this minion did not create

    pve1-network:
      proxmox_network.applied:
        - node: pve1
        - require:
          - proxmox_network: pve1-vmbr1

An interface write only stages ``/etc/network/interfaces.new`` (pve-manager
``PVE/API2/Network.pm``); ``applied`` shows the staged diff in the plan and reloads the node in
the apply, after checking the cluster is quorate with every node online, and checks it again
after. Nothing staged: nothing done. The logic lives in ``salt_proxmox.network`` behind the
``proxmox`` execution module."""

__virtualname__ = "proxmox_network"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def interface(name, node, target=None, adopt=False, **kwargs):
    """Ensure interface ``name`` on ``node`` is staged as declared (PVE's keys). An interface declared
    present is never removed: ``removal`` belongs to ``interface_absent``, and is refused here.
    """
    return __salt__["proxmox.run_state"](globals(), "interface", locals())


def interface_absent(name, node, target=None, removal="retain"):
    """Stop managing interface ``name`` on ``node``: ``removal: retain`` (default) forgets it;
    ``removal: destroy`` stages its deletion when this minion created it and it is unchanged.
    """
    return __salt__["proxmox.run_state"](globals(), "interface_absent", locals())


def applied(name, node, target=None):
    """Apply what is staged on ``node`` (``name`` is a label). Under ``test=True`` the staged diff is
    shown, secret-looking values masked.
    """
    return __salt__["proxmox.run_state"](globals(), "applied", locals())
