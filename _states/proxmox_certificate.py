"""State module ``proxmox_certificate``: a node's API/GUI certificate, what pveproxy serves on port 8006.

.. code-block:: yaml

    pve1:
      proxmox_certificate.present:
        - type: custom
        - certificates: |              # the PEM chain, the leaf first (public)
            -----BEGIN CERTIFICATE-----
            ...
        - secrets_pillar: proxmox:certificates:pve1  # key, from pillar (never an argument)
        - trusted: true                # the target's verify bundle trusts it (else checked at plan)

    pve2:
      proxmox_certificate.present:
        - type: acme
        - account: default
        - domains:
          - domain: pve2.example.org
            plugin: example-dns        # a proxmox_acme plugin; default standalone
        - renew_days: 30               # renew when it expires within this many days
        - trusted: true

    pve3:
      proxmox_certificate.absent:
        - removal: retain              # default: forget it; destroy: custom -> back to pve-ssl.pem,
                                       # acme -> the node config's acme entries only (never a revoke)

The logic lives in ``salt_proxmox.certificate.spec`` behind the ``proxmox`` execution module."""

__virtualname__ = "proxmox_certificate"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def present(name, type=None, target=None, adopt=False, secrets_pillar=None, **kwargs):
    """Ensure node ``name``'s pveproxy certificate is as declared. Under ``test=True`` nothing is written."""
    return __salt__["proxmox.run_state"](globals(), "present", locals())


def absent(name, target=None, removal="retain", **kwargs):
    """Stop managing node ``name``'s certificate: ``removal: retain`` (default) forgets it; ``removal:
    destroy`` removes a custom certificate (PVE falls back to pve-ssl.pem) or the node's ACME settings."""
    return __salt__["proxmox.run_state"](globals(), "absent", locals())
