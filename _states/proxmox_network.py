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
``proxmox`` execution module.

:depends: salt_proxmox
"""

__virtualname__ = "proxmox_network"


def __virtual__():
    if "proxmox.network_applied" not in __salt__:
        return False, "proxmox_network: the proxmox execution module is not available"
    return __virtualname__


def _run():
    """This state run as Salt injects it (``__low__``, ``__lowstate__``, ``__instance_id__``),
    passed through whole for the library's run-wide checks and reads: ``__instance_id__`` is what
    tells one run from the next (``lowstate.Run.of``), so what a zone's plan learned serves the
    vnet after it."""
    return {key: globals().get(key) for key in ("__low__", "__lowstate__", "__instance_id__")}


def _state_id(name):
    return (globals().get("__low__") or {}).get("__id__", name)


def _declared(kwargs):
    """The keys the state was given beyond its own, for the library to refuse by name."""
    return {key: value for key, value in kwargs.items() if not key.startswith("__")}


def interface(name, node, target=None, adopt=False, **config):
    """
    Ensure interface ``name`` on ``node`` is staged as declared (PVE's keys). An interface declared
    present is never removed: ``removal`` belongs to ``interface_absent``, and is refused here.
    """
    return __salt__["proxmox.network_interface_present"](
        name,
        node,
        test=__opts__["test"],
        target=target,
        adopt=adopt,
        state_id=_state_id(name),
        **_declared(config),
        **_run(),
    )


def interface_absent(name, node, target=None, removal="retain"):
    """
    Stop managing interface ``name`` on ``node``: ``removal: retain`` (default) forgets it;
    ``removal: destroy`` stages its deletion when this minion created it and it is unchanged.
    """
    return __salt__["proxmox.network_interface_absent"](
        name, node, test=__opts__["test"], target=target, removal=removal, state_id=_state_id(name), **_run()
    )


def applied(name, node, target=None):
    """
    Apply what is staged on ``node`` (``name`` is a label). Under ``test=True`` the staged diff is
    shown, secret-looking values masked.
    """
    return __salt__["proxmox.network_applied"](
        name, node, test=__opts__["test"], target=target, state_id=_state_id(name)
    )
