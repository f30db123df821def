"""State module ``openbao_policy``: OpenBao ACL policies assembled from ordered HCL fragments.

.. code-block:: yaml

    salt-proxmox-creds:
      openbao_policy.present:
        - fragments:
          - salt://proxmox/files/openbao/proxmox-creds.hcl   # a file from the Salt file server
          - |                                                 # inline HCL
            path "sys/policy/salt-proxmox-*" {
              capabilities = ["create", "read", "update"]
            }
        - adopt: false          # true takes over a policy this minion did not write
        - removal: retain       # what a rename does with the old policy (destroy: delete it)
        - rename_from: null     # the old name of a renamed policy; the new one is written first

The policy is compared by the sha256 of its assembled text; the plan shows the number of
``path`` grants before and after and a unified diff. Names are keyed in lower case, as OpenBao
keys them. Under ``test=True`` nothing is written (not OpenBao, not grains). The logic lives in
``salt_proxmox.openbao_policy`` behind the ``openbao`` execution module."""

__virtualname__ = "openbao_policy"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def present(name, fragments, adopt=False, removal="retain", rename_from=None, **kwargs):
    """Ensure policy ``name`` holds the text assembled from ``fragments`` (HCL strings and
    ``salt://`` files, in order; an empty assembly is refused).
    """
    return __salt__["proxmox.run_state"](globals(), "present", locals())


def absent(name, removal="retain", **kwargs):
    """Stop managing policy ``name``: ``removal: retain`` (default) forgets it and leaves it in
    OpenBao; ``removal: destroy`` deletes it only when it still holds what this minion wrote.
    """
    return __salt__["proxmox.run_state"](globals(), "absent", locals())
