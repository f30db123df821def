"""A minion's state run simulated in-process: this project's ``_states`` and ``_modules`` loaded with the
dunders Salt's loader and state run give them, so a declaration goes through the same skin, execution
module and library entry points as under ``salt-call``, in milliseconds.

- ``SaltWorld(config, pillar, rows_file)`` loads ``_modules/proxmox.py``, ``_modules/openbao.py`` and every
  ``_states`` module from the tree the importable ``salt_proxmox`` package sits in (so pointing
  ``PYTHONPATH`` at another checkout runs that checkout's modules); ``__salt__`` holds their public
  functions, ``config.get`` reading ``config`` then ``pillar`` as Salt's does (colon paths), and
  ``cp.get_file_str``; ``__context__`` is one dict for the world, as a minion keeps it between runs.
- ``world.run(chunks, test)`` is one ``state.apply``: each chunk (``Low``) becomes a low chunk, and each is
  called as Salt 3006-3008 ``salt/state.py`` ``State.call`` calls it: ``salt.utils.args.format_call``
  against the function's signature (an unexpected key of a function without ``**kwargs`` is Salt's
  ``SaltInvocationError``), ``__low__``, ``__lowstate__`` (every chunk), ``__instance_id__`` (one per run),
  ``__env__`` and ``__opts__['test']`` injected, an exception turned into a failed return holding its
  traceback. Requisites are not evaluated: the chunks run in the order given.
- ``world.formula(pillar)``: the formula's highstate for a pillar (``formula/proxmox/init.sls`` ``estate``),
  and ``chunks_of`` turns it into chunks, in the formula's order.

Ownership rows go to the JSON file ``proxmox:ownership_file`` names (``FileStore``), as under salt-ssh.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import itertools
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import salt.state
import salt.utils.args
import salt.utils.data

import salt_proxmox

#: The tree this run's library, modules, states and formula come from.
ROOT = Path(salt_proxmox.__file__).resolve().parents[1]
MODULES = ("proxmox", "openbao")
_instances = itertools.count(1)


@dataclass(frozen=True)
class Low:
    """One state of a run: ``state`` module, ``fun``ction, its arguments (``name`` among them) and its id
    (the name unless given)."""

    state: str
    fun: str
    args: Mapping[str, object]
    state_id: str | None = None

    @property
    def id(self) -> str:
        return self.state_id or str(self.args.get("name"))

    def chunk(self, order: int) -> dict:
        """The low chunk Salt's compiler makes of it (``salt/state.py`` ``compile_high_data``)."""
        return {
            **self.args,
            "state": self.state,
            "fun": self.fun,
            "__id__": self.id,
            "name": self.args.get("name", self.id),
            "__env__": "base",
            "__sls__": "conformance",
            "order": 10000 + order,
        }


def _load(path: Path, name: str) -> ModuleType:
    loader = importlib.machinery.SourceFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _public(module: ModuleType) -> dict[str, Callable]:
    return {
        name: value
        for name, value in vars(module).items()
        if callable(value)
        and not name.startswith("_")
        and getattr(value, "__module__", None) == module.__name__
    }


@dataclass
class SaltWorld:
    """One minion: its configuration, pillar, ``__context__``, grains, rows file, modules and states."""

    config: dict
    pillar: dict
    rows_file: Path
    context: dict = field(default_factory=dict)
    grains: dict = field(default_factory=dict)
    fetched: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.config = {
            **self.config,
            "proxmox": {**self.config.get("proxmox", {}), "ownership_file": str(self.rows_file)},
        }
        here = self.rows_file.parent
        self.opts = {"test": False, "local": True, "id": "conformance", "conf_file": str(here / "minion"),
                     "cachedir": str(here / "cache")}  # fmt: skip
        self.salt: dict[str, Callable] = {
            "config.get": self.config_get,
            "cp.get_file_str": lambda url, saltenv="base": self.fetched.get(url, False),
            "saltutil.refresh_modules": lambda: None,
        }
        self.modules = {}
        for name in MODULES:
            module = self._dunders(_load(ROOT / "_modules" / f"{name}.py", f"conformance_mod_{name}"))
            self.modules[name] = module
            self.salt.update({f"{name}.{fun}": value for fun, value in _public(module).items()})
        self.states = {
            path.stem: self._dunders(_load(path, f"conformance_state_{path.stem}"))
            for path in sorted((ROOT / "_states").glob("*.py"))
            if path.stem != "__init__"
        }

    def _dunders(self, module: ModuleType) -> ModuleType:
        module.__salt__ = self.salt
        module.__opts__ = self.opts
        module.__context__ = self.context
        module.__grains__ = self.grains
        module.__pillar__ = self.pillar
        return module

    def config_get(self, key: str, default: object = None) -> object:
        """Salt's ``config.get``: the minion configuration, then pillar (``salt/modules/config.py``)."""
        for source in (self.config, self.pillar):
            found = salt.utils.data.traverse_dict_and_list(source, key, default=None)
            if found is not None:
                return found
        return default

    def call(self, low: dict, chunks: list[dict], test: bool, instance: int) -> dict:
        """One chunk, as ``salt/state.py`` ``State.call`` runs it."""
        state = self.states.get(low["state"])
        function = getattr(state, low["fun"], None) if state is not None else None
        if function is None:
            missing = f"{low['state']}.{low['fun']} is not available"
            return {"name": low["name"], "result": False, "changes": {}, "comment": missing}
        self.opts["test"] = test
        state.__low__ = low
        state.__lowstate__ = chunks
        state.__instance_id__ = instance
        state.__env__ = low.get("__env__", "base")
        state.__virtualname__ = getattr(state, "__virtualname__", low["state"])
        try:
            cdata = salt.utils.args.format_call(
                function, low, initial_ret={"full": f"{low['state']}.{low['fun']}"},
                expected_extra_kws=salt.state.STATE_INTERNAL_KEYWORDS,
            )  # fmt: skip
            ret = function(*cdata["args"], **cdata["kwargs"])
        except Exception:
            ret = {"name": low["name"], "result": False, "changes": {},
                   "comment": f"An exception occurred in this state: {traceback.format_exc()}"}  # fmt: skip
        finally:
            self.opts["test"] = False
        return ret

    def run(self, lows: list[Low], test: bool) -> list[dict]:
        """One state run of ``lows`` in order: the returns, each with its chunk's ``__id__``."""
        chunks = [low.chunk(order) for order, low in enumerate(lows)]
        instance = next(_instances)
        returns = []
        for chunk in chunks:
            ret = self.call(chunk, chunks, test, instance)
            returns.append({**ret, "__id__": chunk["__id__"]})
        return returns

    def formula(self, pillar: Mapping) -> dict:
        """The formula's highstate for ``pillar`` (state id -> ``{"module.fun": [{arg: value}, ...]}``)."""
        module = _load(ROOT / "formula" / "proxmox" / "init.sls", "conformance_formula")
        return module.estate(dict(pillar))


def chunks_of(highstate: Mapping) -> list[Low]:
    """The formula's states as ``Low``s, in its order; requisites dropped (they are not evaluated here)."""
    lows = []
    for state_id, body in highstate.items():
        ((full, args),) = body.items()
        state, _, fun = full.partition(".")
        declared = {key: value for arg in args for key, value in arg.items() if key != "require"}
        lows.append(Low(state, fun, declared, state_id))
    return lows
