"""Runner ``proxmox``: the formula applied on many minions (one per cluster) from the master, as one
run with one exit code.

.. code-block:: bash

    salt-run proxmox.apply tgt='pve-*' test=True --out=proxmox_plan   # the fleet's plan
    salt-run proxmox.apply tgt='pve-*' --out=proxmox_plan             # its apply; exits 1 if a state failed

``salt --static`` prints every minion at once but exits 0 whatever the states did (Salt 3006-3008
``salt/cli/salt.py`` ``_run_batch`` drops each job's retcode), and without ``--static`` each minion is
printed on its own as it returns. This runner collects every minion's ``state.apply proxmox`` return
and hands them to the outputter at once (``proxmox_plan`` then ends with one summary across the
fleet), and returns a ``retcode`` that ``salt-run`` exits with (``salt/cli/run.py``): 1 when a state
failed, a minion returned no state run, or no minion answered.
"""

__virtualname__ = "proxmox"


def __virtual__():
    return __virtualname__


def _failed(ret):
    """Whether one minion's return is not a state run whose every state succeeded (or planned)."""
    if not isinstance(ret, dict) or not ret:
        return True
    return any(not isinstance(state, dict) or state.get("result") is False for state in ret.values())


def apply(tgt, test=False, tgt_type="glob", sls="proxmox", timeout=None):
    """
    Run ``state.apply <sls>`` (``test=True``: the plan) on the minions ``tgt`` names and return
    ``{"data": {minion: state returns}, "retcode": 0 or 1}``: 1 when any state failed, a minion
    returned something other than a state run (a render error), or no minion answered. ``tgt_type``
    as ``salt``'s (``glob``, ``list``, ``compound``, ...); ``timeout`` in seconds (default: the
    master's ``timeout``). Minions that do not answer in time are left out, and the retcode is 1.

    CLI Example:

    .. code-block:: bash

        salt-run proxmox.apply tgt='pve-*' test=True --out=proxmox_plan
        salt-run proxmox.apply tgt=pve-alpha,pve-beta tgt_type=list --out=proxmox_plan
    """
    import salt.client

    expected = None
    returns = {}
    with salt.client.get_local_client(mopts=__opts__) as client:
        kwarg = {"test": True} if test is True else {}
        for part in client.cmd_iter(
            tgt,
            "state.apply",
            [sls],
            tgt_type=tgt_type,
            kwarg=kwarg,
            timeout=timeout or __opts__.get("timeout"),
            full_return=True,
        ):
            for minion, data in part.items():
                returns[minion] = data.get("ret") if isinstance(data, dict) else data
        expected = client.gather_minions(tgt, tgt_type)
    missing = [minion for minion in (expected or []) if minion not in returns]
    failed = not returns or missing or any(_failed(ret) for ret in returns.values())
    return {"data": returns, "retcode": 1 if failed else 0}
