"""State module ``proxmox_sdn``: SDN controllers, IPAMs, DNS servers, zones, vnets and subnets, and
the SDN apply.

.. code-block:: yaml

    evpnctl:
      proxmox_sdn.controller:
        - type: evpn                   # evpn | bgp | isis, with that type's keys
        - asn: 65000
        - peers: [10.0.0.1, 10.0.0.2]

    netbox:
      proxmox_sdn.ipam:
        - type: netbox                 # pve | netbox | phpipam
        - url: https://netbox.example.com/api
        - secrets_pillar: proxmox:sdn:ipams:netbox    # holds token

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

Writes of controllers, zones, vnets and subnets change the pending SDN configuration (pve-network);
IPAMs and DNS servers are written at once; ``applied`` shows what is pending in
the plan and commits it (``PUT /cluster/sdn``, under PVE's SDN lock) in the apply, with the same
health checks as ``proxmox_network.applied``. The logic lives in ``salt_proxmox.sdn`` behind the
``proxmox`` execution module."""

__virtualname__ = "proxmox_sdn"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def controller(name, type, target=None, adopt=False, **kwargs):
    """Ensure SDN controller ``name`` (evpn, bgp, isis) with its keys is in the SDN configuration."""
    return __salt__["proxmox.run_state"](globals(), "controller", locals())


def ipam(name, type, target=None, adopt=False, secrets_pillar=None, **kwargs):
    """Ensure SDN IPAM ``name`` (pve, netbox, phpipam) with its keys; its token from ``secrets_pillar``."""
    return __salt__["proxmox.run_state"](globals(), "ipam", locals())


def dns(name, type, target=None, adopt=False, secrets_pillar=None, **kwargs):
    """Ensure SDN DNS server ``name`` (powerdns) with its keys; its key from ``secrets_pillar``."""
    return __salt__["proxmox.run_state"](globals(), "dns", locals())


def zone(name, type, target=None, adopt=False, **kwargs):
    """Ensure SDN zone ``name`` of ``type`` with its keys is in the SDN configuration."""
    return __salt__["proxmox.run_state"](globals(), "zone", locals())


def vnet(name, zone, target=None, adopt=False, **kwargs):
    """Ensure SDN vnet ``name`` of ``zone`` with its keys is in the SDN configuration."""
    return __salt__["proxmox.run_state"](globals(), "vnet", locals())


def subnet(name, vnet, target=None, adopt=False, **kwargs):
    """Ensure SDN subnet ``name`` (a CIDR) of ``vnet`` with its keys is in the SDN configuration."""
    return __salt__["proxmox.run_state"](globals(), "subnet", locals())


def controller_absent(name, target=None, removal="retain"):
    """Stop managing SDN controller ``name``: retain (default) or destroy an owned, unchanged one."""
    return __salt__["proxmox.run_state"](globals(), "controller_absent", locals())


def ipam_absent(name, target=None, removal="retain"):
    """Stop managing SDN IPAM ``name``: retain (default) or destroy an owned, unchanged one (not pve)."""
    return __salt__["proxmox.run_state"](globals(), "ipam_absent", locals())


def dns_absent(name, target=None, removal="retain"):
    """Stop managing SDN DNS server ``name``: retain (default) or destroy an owned, unchanged one."""
    return __salt__["proxmox.run_state"](globals(), "dns_absent", locals())


def zone_absent(name, target=None, removal="retain"):
    """Stop managing SDN zone ``name``: retain (default) or destroy an owned, unchanged zone."""
    return __salt__["proxmox.run_state"](globals(), "zone_absent", locals())


def vnet_absent(name, target=None, removal="retain"):
    """Stop managing SDN vnet ``name``: retain (default) or destroy an owned, unchanged vnet."""
    return __salt__["proxmox.run_state"](globals(), "vnet_absent", locals())


def subnet_absent(name, vnet, target=None, removal="retain"):
    """Stop managing SDN subnet ``name`` of ``vnet``: retain (default) or destroy an owned, unchanged one."""
    return __salt__["proxmox.run_state"](globals(), "subnet_absent", locals())


def applied(name, target=None):
    """Commit the pending SDN configuration (``name`` is a label); under ``test=True`` list it."""
    return __salt__["proxmox.run_state"](globals(), "applied", locals())
