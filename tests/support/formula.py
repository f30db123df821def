"""The formula (``formula/proxmox/init.sls``) loaded as Salt's ``py`` renderer loads it
(``salt/utils/templates.py`` ``py``): a module whose ``run()`` reads ``__pillar__``."""

from __future__ import annotations

import importlib.machinery
import importlib.util
from pathlib import Path
from types import ModuleType

SLS = Path(__file__).resolve().parents[2] / "formula" / "proxmox" / "init.sls"


def formula() -> ModuleType:
    """The formula's module, freshly executed (set ``__pillar__`` on it before calling ``run()``)."""
    loader = importlib.machinery.SourceFileLoader("proxmox_formula", str(SLS))
    spec = importlib.util.spec_from_file_location("proxmox_formula", SLS, loader=loader)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
