"""The ``salt.loader`` entry point (new style: a callable returning ``{ext_type: [dirs]}``).

Salt 3008 ``salt/loader/__init__.py`` (``_module_dirs``) calls this once per loader type and
reads the key for that type: ``modules`` for execution modules, ``states`` for state modules,
``output`` for outputters (``proxmox_plan``), ``runners`` for the master's runners (``proxmox.apply``),
``grains`` for grains modules (``salt_proxmox:owned``).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path


def _package_dir(name: str) -> str | None:
    """The directory holding the modules of subpackage ``name`` (installed or editable), or None."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return str(Path(next(iter(spec.submodule_search_locations))).resolve())


def loader_dirs() -> dict[str, list[str]]:
    """``{"modules": [dir], "states": [dir], "output": [dir], "runners": [dir], "grains": [dir]}`` for
    Salt's loader,
    leaving out a type whose subpackage is not there.

    It is not there in salt-ssh's thin when the master has an editable install: Salt 3008 packs the
    directory of the entry point's package, ``saltext_proxmox/``, alone (``salt/utils/thin.py``
    ``_discover_saltexts``), while the editable install maps the subpackages to ``_modules/`` and
    ``_states/``. The modules then reach the target from file_roots, as salt-ssh sends them with each
    state run; raising here would only log an error per loader.
    """
    dirs = {}
    for ext_type in ("modules", "states", "output", "runners", "grains"):
        found = _package_dir(f"saltext_proxmox.{ext_type}")
        if found is not None:
            dirs[ext_type] = [found]
    return dirs
