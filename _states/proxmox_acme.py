"""State module ``proxmox_acme``: Proxmox VE ACME challenge plugins (``priv/acme/plugins.cfg``, cluster-wide).

.. code-block:: yaml

    example-dns:
      proxmox_acme.plugin:
        - type: dns                    # identity: another type is another plugin id
        - api: cf                      # one of GET /cluster/acme/challenge-schema
        - validation-delay: 60         # PVE's default 30 is no drift
        - nodes: [pve1, pve2]          # a set; left out: every node
        - secrets_pillar: proxmox:acme:plugins:example-dns  # data (KEY=value lines or a mapping)
        - secret_serial: 1             # data is written again when it changes

    old-dns:
      proxmox_acme.plugin_absent:
        - removal: destroy             # refused while a node's acmedomainN names it

    default:
      proxmox_acme.account:            # read and written as root@pam through the target's root_lane
        - contact: [ops@example.org]   # a set of addresses; the only thing PVE updates
        - directory: https://acme-v02.api.letsencrypt.org/directory   # fixed once registered
        - tos_url: https://letsencrypt.org/documents/LE-SA-v1.5-February-24-2025.pdf  # agreement

    old-account:
      proxmox_acme.account_absent:
        - removal: destroy             # deactivates it at the CA (irreversible); refused while a node uses it

``data`` is never compared or shown; the built-in ``standalone`` plugin is never deleted. An account's
``eab-hmac-key`` comes from ``secrets_pillar`` and is never compared or shown (through a pvesh lane an EAB
account is refused: the key would be in pvesh's argv). The logic lives in ``salt_proxmox.datacenter.acme``
and ``salt_proxmox.datacenter.acme_account`` behind the ``proxmox`` execution module."""

__virtualname__ = "proxmox_acme"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def plugin(name, type="dns", target=None, adopt=False, secrets_pillar=None, **kwargs):
    """Ensure ACME plugin ``name`` is defined as declared. Under ``test=True`` nothing is written."""
    return __salt__["proxmox.run_state"](globals(), "plugin", locals())


def plugin_absent(name, target=None, removal="retain"):
    """Stop managing ACME plugin ``name``: ``removal: retain`` (default) forgets it; ``removal: destroy``
    deletes it when this minion created it, it is unchanged and no node's certificate names it."""
    return __salt__["proxmox.run_state"](globals(), "plugin_absent", locals())


def account(name, target=None, adopt=False, secrets_pillar=None, **kwargs):
    """Ensure ACME account ``name`` is registered as declared (``contact``, ``directory``, ``tos_url``,
    ``eab-kid``), through the target's root lane. Under ``test=True`` nothing is written."""
    return __salt__["proxmox.run_state"](globals(), "account", locals())


def account_absent(name, target=None, removal="retain"):
    """Stop managing ACME account ``name``: ``removal: retain`` (default) forgets it; ``removal: destroy``
    deactivates it at the CA (irreversible) when this minion registered it, it is unchanged and no node's
    certificate configuration uses it."""
    return __salt__["proxmox.run_state"](globals(), "account_absent", locals())
