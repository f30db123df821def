"""State module ``proxmox_notification``: PVE notification endpoints and matchers (``notifications.cfg``).

.. code-block:: yaml

    ops-mail:
      proxmox_notification.endpoint:
        - type: smtp                   # sendmail | smtp | gotify | webhook (PVE 8.3+)
        - server: mail.example.org
        - mode: starttls               # port left out: the mode's port (587)
        - username: pve
        - from-address: pve@example.org
        - mailto: [ops@example.org]
        - secrets_pillar: proxmox:notifications:endpoints:ops-mail  # password, from pillar
        - secret_serial: 1             # the password is written again when it changes

    backups-to-ops:
      proxmox_notification.matcher:
        - match-field: [exact:type=vzdump]
        - match-severity: [warning,error]
        - targets: [ops-mail]          # PVE's target list: each an endpoint that exists or this run declares
        - require:
          - proxmox_notification: ops-mail

    mail-to-root:
      proxmox_notification.endpoint:
        - type: sendmail
        - mailto-user: [root@pam]
        - adopt: true                  # the built-in one: adopted, changed, never deleted

    old-hook:
      proxmox_notification.endpoint_absent:
        - removal: destroy             # refused while a matcher targets it

Lists compare as sets, a webhook's headers and body by meaning; secrets are never read back. The logic
lives in ``salt_proxmox.datacenter.notifications`` and ``.matchers`` behind the ``proxmox`` execution
module."""

__virtualname__ = "proxmox_notification"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def endpoint(name, type=None, target=None, adopt=False, secrets_pillar=None, **kwargs):
    """Ensure notification endpoint ``name`` of ``type`` holds its declared keys. Under ``test=True``
    nothing is written."""
    return __salt__["proxmox.run_state"](globals(), "endpoint", locals())


def matcher(name, target=None, adopt=False, **kwargs):
    """Ensure notification matcher ``name`` holds its declared keys; ``targets`` is PVE's ``target`` list
    (``target`` names the cluster, as in every state). Under ``test=True`` nothing is written."""
    return __salt__["proxmox.run_state"](globals(), "matcher", locals())


def endpoint_absent(name, type=None, target=None, removal="retain"):
    """Stop managing notification endpoint ``name``: retain (default) or destroy an owned, unchanged one
    no matcher targets; the built-in ``mail-to-root`` is never deleted."""
    return __salt__["proxmox.run_state"](globals(), "endpoint_absent", locals())


def matcher_absent(name, target=None, removal="retain"):
    """Stop managing notification matcher ``name``: retain (default) or destroy an owned, unchanged one;
    the built-in ``default-matcher`` is never deleted."""
    return __salt__["proxmox.run_state"](globals(), "matcher_absent", locals())
