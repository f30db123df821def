"""The ``salt_proxmox:owned`` grain: this minion's ownership rows (docs/design.md §8), read from the
rows file ``salt_proxmox.ownership.files.MinionStore`` keeps beside the grains file.

Salt runs grains modules at start-up and at every grains refresh (Salt 3008 ``salt/loader``
``grains``). The rows are parsed as JSON (C, about 20 ms for 1000 rows) where the grains file is
parsed with PyYAML's pure-Python loader (1.5 s for the same rows). Without a rows file there is no
such grain here: rows an earlier version kept in the grains file still show from there.
"""

import logging
import os

import salt.utils.platform

from salt_proxmox.ownership.files import FileStore
from salt_proxmox.ownership.stores import OwnershipFileError, rows_file

log = logging.getLogger(__name__)

__proxyenabled__ = ["*"]


def owned():
    """``{"salt_proxmox": {"owned": {<row key>: <row>}}}`` from the rows file, or ``{}`` when there
    is none. The file ``proxmox:ownership_file`` names in the minion config, when set, else the
    minion's own. A file that cannot be read is logged (naming it) and shows no grain: the states
    read the file themselves and fail on it, never taking it for "no rows"."""
    configured = __opts__.get("proxmox")  # noqa: F821 - injected by Salt's loader
    path = configured.get("ownership_file") if isinstance(configured, dict) else None
    if not path:
        if "conf_file" not in __opts__:  # noqa: F821
            return {}
        path = rows_file(__opts__, salt.utils.platform.is_proxy())  # noqa: F821
    if not os.path.exists(path):
        return {}
    try:
        rows = FileStore(path).load()
    except OwnershipFileError as exc:
        log.error("salt_proxmox:owned grain not loaded: %s", exc)
        return {}
    return {"salt_proxmox": {"owned": rows}}
