"""The project's Salt modules loaded as Salt loads them (dunders injected), and a recorder of the
execution-module calls a state makes."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]


def load(kind: str, name: str, salt: dict, test: bool, low: dict | None = None) -> ModuleType:
    """A module from ``_states``/``_modules`` with Salt's dunders set as the loader would."""
    spec = importlib.util.spec_from_file_location(f"{kind}_{name}", REPO / kind / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.__salt__ = salt
    # A --local minion: no daemon serves its grains, so a state run asks none to reload them.
    module.__opts__ = {"test": test, "local": True}
    if low is not None:
        module.__low__ = low
    module.__env__ = "base"
    module.__context__ = {}
    return module


class Recorder(dict):
    """``__salt__`` whose functions record (name, args, kwargs) and answer a state return; its
    ``proxmox.run_state`` is the real skin (``_modules/proxmox.py``), which every state calls."""

    def __init__(self, *names: str) -> None:
        super().__init__()
        self.calls: list[tuple[str, tuple, dict]] = []
        for fun in names:
            self[fun] = self._fun(fun)
        self["proxmox.run_state"] = load("_modules", "proxmox", self, False).run_state

    def _fun(self, fun: str):
        def call(*args, **kwargs):
            self.calls.append((fun, args, kwargs))
            name = args[0] if args else kwargs.get("name", "")
            return {"name": name, "result": True, "changes": {}, "comment": ""}

        return call


def execution_module(config: dict, test: bool = False) -> ModuleType:
    """``_modules/proxmox.py`` as a minion with ``--local`` loads it, reading ``config`` (``proxmox:targets``,
    ``proxmox:ownership_file``, ...) through ``config.get``; outside a state run."""
    salt = {"config.get": lambda key, default=None: config.get(key, default)}
    module = load("_modules", "proxmox", salt, test)
    module.__grains__ = {}
    module.__opts__ = {"test": test, "local": True}
    return module
