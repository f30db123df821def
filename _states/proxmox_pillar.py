"""State module ``proxmox_pillar``: the proxmox formula's refusal of a pillar entry it cannot turn into
a state (a Salt keyword, a misspelt ``ensure`` or section, a key YAML did not read as a string, ...).

.. code-block:: yaml

    proxmox-lxc-web:
      proxmox_pillar.refused:
        - name: pillar proxmox:lxc:web
        - comment: "pillar proxmox:lxc:web: unless is a Salt keyword ... Nothing was written."

It fails, in a plan (``test=True``) as in an apply, and does nothing else: it needs no library, so a
refused entry is reported even where nothing else loads. Salt's ``test.configurable_test_state`` fails
under ``test=True`` only from Salt 3007 (``allow_test_mode_failure``), and 3006 would pass it silently.
"""


def refused(name, comment):
    """
    Fail naming the pillar key (``name``) and why (``comment``), under ``test=True`` too.
    """
    return {"name": name, "result": False, "changes": {}, "comment": comment}
