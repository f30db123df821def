"""State module ``proxmox_sdn``: SDN zones, vnets and subnets, and the SDN apply.

.. code-block:: yaml

    lab:
      proxmox_sdn.zone:
        - type: vlan                   # simple | vlan | vxlan | evpn, with that type's keys
        - bridge: vmbr1

    labnet:
      proxmox_sdn.vnet:
        - zone: lab
        - tag: 20
        - alias: Lab guests
        - require:
          - proxmox_sdn: lab

    labnet-v4:
      proxmox_sdn.subnet:
        - name: 10.20.0.0/24           # the CIDR
        - vnet: labnet
        - gateway: 10.20.0.1
        - snat: true
        - dhcp-range: [start-address=10.20.0.100,end-address=10.20.0.199]
        - require:
          - proxmox_sdn: labnet

    sdn:
      proxmox_sdn.applied:
        - require:
          - proxmox_sdn: labnet-v4

Writes change the pending SDN configuration (pve-network); ``applied`` shows what is pending in
the plan and commits it (``PUT /cluster/sdn``, under PVE's SDN lock) in the apply, with the same
health checks as ``proxmox_network.applied``. The logic lives in ``salt_proxmox.sdn`` behind the
``proxmox`` execution module.

:depends: salt_proxmox
"""

__virtualname__ = "proxmox_sdn"


def __virtual__():
    if "proxmox.sdn_applied" not in __salt__:
        return False, "proxmox_sdn: the proxmox execution module is not available"
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


def _common(name):
    return {"test": __opts__["test"], "state_id": _state_id(name), **_run()}


def zone(name, type, target=None, adopt=False, **config):
    """Ensure SDN zone ``name`` of ``type`` with its keys is in the SDN configuration."""
    return __salt__["proxmox.sdn_zone_present"](
        name, type, target=target, adopt=adopt, **_common(name), **_declared(config)
    )


def vnet(name, zone, target=None, adopt=False, **config):
    """Ensure SDN vnet ``name`` of ``zone`` with its keys is in the SDN configuration."""
    return __salt__["proxmox.sdn_vnet_present"](
        name, zone, target=target, adopt=adopt, **_common(name), **_declared(config)
    )


def subnet(name, vnet, target=None, adopt=False, **config):
    """Ensure SDN subnet ``name`` (a CIDR) of ``vnet`` with its keys is in the SDN configuration."""
    return __salt__["proxmox.sdn_subnet_present"](
        name, vnet, target=target, adopt=adopt, **_common(name), **_declared(config)
    )


def zone_absent(name, target=None, removal="retain"):
    """Stop managing SDN zone ``name``: retain (default) or destroy an owned, unchanged zone."""
    return __salt__["proxmox.sdn_absent"]("zone", name, target=target, removal=removal, **_common(name))


def vnet_absent(name, target=None, removal="retain"):
    """Stop managing SDN vnet ``name``: retain (default) or destroy an owned, unchanged vnet."""
    return __salt__["proxmox.sdn_absent"]("vnet", name, target=target, removal=removal, **_common(name))


def subnet_absent(name, vnet, target=None, removal="retain"):
    """Stop managing SDN subnet ``name`` of ``vnet``: retain (default) or destroy an owned, unchanged one."""
    return __salt__["proxmox.sdn_absent"](
        "subnet", name, target=target, removal=removal, vnet=vnet, **_common(name)
    )


def applied(name, target=None):
    """Commit the pending SDN configuration (``name`` is a label); under ``test=True`` list it."""
    return __salt__["proxmox.sdn_applied"](name, target=target, **_common(name))
