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
``salt_proxmox.bao`` behind the ``openbao`` execution module.

:depends: salt_proxmox, hvac
"""

__virtualname__ = "openbao_policy"


def __virtual__():
    if "openbao.policy_present" not in __salt__:
        return False, "openbao_policy: the openbao execution module is not available"
    return __virtualname__


def _run():
    """This state run as Salt injects it (``__low__``, ``__lowstate__``, ``__instance_id__``),
    passed through whole for the library's run-wide checks and reads."""
    return {key: globals().get(key) for key in ("__low__", "__lowstate__", "__instance_id__")}


def _state_id(name):
    return (globals().get("__low__") or {}).get("__id__", name)


def _declared(kwargs):
    """The keys the state was given beyond its own, for the library to refuse by name."""
    return {key: value for key, value in kwargs.items() if not key.startswith("__")}


def present(name, fragments, adopt=False, removal="retain", rename_from=None, **kwargs):
    """
    Ensure policy ``name`` holds the text assembled from ``fragments`` (HCL strings and
    ``salt://`` files, in order; an empty assembly is refused).
    """
    return __salt__["openbao.policy_present"](
        name,
        fragments,
        test=__opts__["test"],
        adopt=adopt,
        removal=removal,
        rename_from=rename_from,
        state_id=_state_id(name),
        saltenv=globals().get("__env__", "base"),
        **_declared(kwargs),
        **_run(),
    )


def absent(name, removal="retain", **kwargs):
    """
    Stop managing policy ``name``: ``removal: retain`` (default) forgets it and leaves it in
    OpenBao; ``removal: destroy`` deletes it only when it still holds what this minion wrote.
    """
    return __salt__["openbao.policy_absent"](
        name, test=__opts__["test"], removal=removal, state_id=_state_id(name), **_declared(kwargs), **_run()
    )
