"""The ``salt.loader`` entry point (new style: a callable returning ``{ext_type: [dirs]}``).

Salt 3008 ``salt/loader/__init__.py`` (``_module_dirs``) calls this once per loader type and
reads the key for that type: ``modules`` for execution modules, ``states`` for state modules.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path


def _package_dir(name: str) -> str:
    """The directory holding the modules of subpackage ``name`` (installed or editable)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"{name} is not installed")
    return str(Path(next(iter(spec.submodule_search_locations))).resolve())


def loader_dirs() -> dict[str, list[str]]:
    """``{"modules": [dir], "states": [dir]}`` for Salt's loader."""
    return {
        "modules": [_package_dir("saltext_proxmox.modules")],
        "states": [_package_dir("saltext_proxmox.states")],
    }
