"""State module ``proxmox_metric_server``: Proxmox VE external metric servers (``status.cfg``, cluster-wide).

.. code-block:: yaml

    graphite:
      proxmox_metric_server.present:
        - type: graphite               # identity: another type is another metric server id
        - server: 192.0.2.40
        - port: 2003                   # the type's default port when left out (graphite 2003)
        - path: proxmox.lab
        - proto: udp

    influx:
      proxmox_metric_server.present:
        - type: influxdb
        - server: influx.example.org
        - port: 8086
        - influxdbproto: https
        - organization: lab
        - bucket: pve
        - secrets_pillar: proxmox:metric_servers:influx  # token, from pillar
        - secret_serial: 1             # the token is written again when it changes

    old:
      proxmox_metric_server.absent:
        - removal: retain              # default: forget it; destroy: delete it

PVE's defaults are no drift; ``opentelemetry`` needs PVE 9. The logic lives in
``salt_proxmox.datacenter.metrics`` behind the ``proxmox`` execution module."""

__virtualname__ = "proxmox_metric_server"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def present(name, type=None, target=None, adopt=False, secrets_pillar=None, **kwargs):
    """Ensure metric server ``name`` is defined as declared. Under ``test=True`` nothing is written."""
    return __salt__["proxmox.run_state"](globals(), "present", locals())


def absent(name, target=None, removal="retain", **kwargs):
    """Stop managing metric server ``name``: ``removal: retain`` (default) forgets it; ``removal: destroy``
    deletes it when this minion created it and it is unchanged."""
    return __salt__["proxmox.run_state"](globals(), "absent", locals())
