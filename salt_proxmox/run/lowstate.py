"""The whole state run as Salt hands it to a state module, for checks that need every declaration.

During a state run Salt injects into each state function ``__low__`` (the chunk being run) and
``__lowstate__`` (every chunk of the run, in order): Salt 3008 ``salt/state.py`` ``State.call``,
``inject_globals``. A chunk is a mapping of the state's arguments plus Salt's own keys:
``state`` (the state module, ``proxmox_lxc``), ``fun`` (``present``), ``__id__`` (the state id),
``name``, ``__sls__``, ``__env__``, ``order`` and the requisites.

The state modules pass both through unchanged as keyword arguments ``__low__`` and
``__lowstate__`` (``declared_keys`` drops them from what a family sees); ``Run.of`` picks them up.
Outside a state run (an execution-module call from the command line) there is no run: ``Run.of``
returns None and every run-wide check is skipped.

``Run.declared`` yields the chunks of one state module, optionally only those on one target: what
a run-wide read (every guest a run declares) or a run-wide check needs. ``twins`` finds the other
declarations of the object a chunk declares (docs/design.md §8 "One object, one state").
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field

#: The ownership row keys of the objects one chunk declares (empty: its identity cannot be read).
KeysOf = Callable[["Chunk"], frozenset[str]]

#: The chunk keys that are Salt's, not the state's arguments (besides every ``__``-prefixed key).
SALT_KEYS = frozenset({"state", "fun", "order", "name", "names"})


@dataclass(frozen=True)
class Chunk:
    """One declaration of the run.

    - ``state_id``: the state id (``__id__``); ``name``: the state's ``name`` (the id unless
      ``name:`` or ``names:`` gave another);
    - ``state``/``fun``: the state module and function (``proxmox_lxc``, ``present``);
    - ``args``: the state's own arguments (no ``__``-prefixed key, no ``state``/``fun``/``order``/
      ``name``), as declared — requisites included, which no identity reads.
    """

    state_id: str
    name: str
    state: str
    fun: str
    args: Mapping[str, object] = field(default_factory=dict)

    @classmethod
    def of(cls, low: Mapping) -> Chunk | None:
        """The chunk of one low mapping, or None when it is not a state chunk (no ``state``/``fun``)."""
        state, fun = low.get("state"), low.get("fun")
        if not isinstance(state, str) or not isinstance(fun, str):
            return None
        name = low.get("name")
        state_id = low.get("__id__", name)
        args = {
            key: value for key, value in low.items() if not str(key).startswith("__") and key not in SALT_KEYS
        }
        return cls(str(state_id), str(name if name is not None else state_id), state, fun, args)

    def target(self, default: str | None) -> str | None:
        """The ``proxmox:targets`` name this chunk declares for: its ``target``, else ``default``
        (the only target configured; None when several are and none is named)."""
        named = self.args.get("target")
        return named if isinstance(named, str) and named else default

    @property
    def label(self) -> str:
        """How a sentence names the declaration: ``state web (proxmox_lxc.present)``, with the
        name when ``names:`` made several chunks of one id."""
        shown = f"state {self.state_id}"
        if self.name != self.state_id:
            shown += f" (name {self.name})"
        return f"{shown} ({self.state}.{self.fun})"

    @property
    def forked(self) -> bool:
        """Whether Salt runs this chunk in a process of its own: ``parallel: True`` (Salt 3006–3008
        ``salt/state.py`` ``State.call_parallel``; the formula sets it on overlapping creates)."""
        return self.args.get("parallel") is True

    def same_as(self, other: Chunk) -> bool:
        """True for the same declaration (Salt's tag: id, name, state, function)."""
        return (self.state_id, self.name, self.state, self.fun) == (
            other.state_id,
            other.name,
            other.state,
            other.fun,
        )


#: Where ``Run.of`` keeps the parsed run in the run's cache.
RUN_KEY = "salt_proxmox.run"


class Run:
    """One state run: every chunk, and the one running now (``current``, None when unknown).

    ``key`` tells runs apart: Salt's ``__instance_id__`` (one per ``State`` object, so one per
    run) when the state module passed it through, else the identity of the chunk list.
    """

    def __init__(self, lowstate: Iterable[object], low: Mapping | None = None, key: object = None):
        chunks = (Chunk.of(item) for item in lowstate if isinstance(item, Mapping))
        self.chunks: list[Chunk] = [chunk for chunk in chunks if chunk is not None]
        self.current: Chunk | None = Chunk.of(low) if isinstance(low, Mapping) else None
        self.key: object = key if key is not None else id(lowstate)
        self._keys: dict[tuple[str, ...], dict[str, list[tuple[int, Chunk]]]] = {}
        #: The last ``at``: (the low mapping, this run at it). A state asks several times.
        self._at: tuple[object, Run] | None = None

    def at(self, low: object) -> Run:
        """This run (its chunks parsed once) with ``low`` as the chunk running now; the same object
        for the same ``low`` (Salt's ``__low__`` of the state running), so a state that asks
        several times parses its chunk once."""
        if self._at is not None and self._at[0] is low:
            return self._at[1]
        run = copy.copy(self)
        run.current = Chunk.of(low) if isinstance(low, Mapping) else None
        run._at = None
        self._at = (low, run)
        return run

    @classmethod
    def of(cls, kwargs: Mapping[str, object], cache: MutableMapping | None = None) -> Run | None:
        """The run a state module passed through (keys ``__lowstate__``, ``__low__`` and
        ``__instance_id__`` of a call's keyword arguments), or None outside a state run.

        With ``cache`` (Salt's ``__context__``) the run's chunks are parsed once per run and kept
        there under ``RUN_KEY`` (only the latest run), not once per state: a run of N states would
        otherwise parse N² chunks."""
        lowstate = kwargs.get("__lowstate__")
        if not isinstance(lowstate, Iterable) or isinstance(lowstate, str | bytes | Mapping):
            return None
        instance = kwargs.get("__instance_id__")
        key = instance if instance is not None else id(lowstate)
        kept = None if cache is None else cache.get(RUN_KEY)
        if not isinstance(kept, cls) or kept.key != key:
            kept = cls(lowstate, None, key)
            if cache is not None:
                cache[RUN_KEY] = kept
        return kept.at(kwargs.get("__low__"))

    def declared(self, state: str, target: str | None = None, default: str | None = None) -> Iterator[Chunk]:
        """The chunks of state module ``state`` (``proxmox_lxc``), in run order; with ``target``,
        only those declared for it (a chunk naming no target is on ``default``, the only target
        configured)."""
        for chunk in self.chunks:
            if chunk.state != state:
                continue
            if target is None or chunk.target(default) == target:
                yield chunk

    def twins(self, states: Iterable[str], keys_of: KeysOf) -> list[Chunk]:
        """The other chunks of ``states`` that declare an object the current chunk declares.

        ``keys_of`` gives the ownership row keys of the objects a chunk declares (docs/design.md §8:
        its own, and the old one a ``rename_from`` names), empty when the chunk's identity cannot be
        read (it is refused on its own when it runs); for the same ``states`` it must be the same
        function throughout a run (the keys are computed once). Empty when there is no current chunk.
        """
        me = self.current
        if me is None:
            return []
        mine = keys_of(me)
        if not mine:
            return []
        # Keyed once per run and set of state modules, so a run of N states costs N keys, not N².
        wanted = tuple(sorted(set(states)))
        by_key = self._keys.get(wanted)
        if by_key is None:
            by_key = {}
            for at, chunk in enumerate(self.chunks):
                if chunk.state in wanted:
                    for key in keys_of(chunk):
                        by_key.setdefault(key, []).append((at, chunk))
            self._keys[wanted] = by_key
        found = dict(pair for key in mine for pair in by_key.get(key, []))
        return [chunk for _, chunk in sorted(found.items()) if not chunk.same_as(me)]


def twins_refusal(run: Run | None, states: Iterable[str], keys_of: KeysOf) -> str | None:
    """The refusal of the current declaration when another state of the run declares one of its
    objects (same ownership row key, ``<target>/<family>/<identity>``), else None.

    Both declarations are refused, each naming the other, in the plan as in the apply and before
    either writes: Salt runs them one after the other, so a check on rows alone would let the
    first write and record its row before the second noticed.
    """
    if run is None or run.current is None:
        return None
    others = run.twins(states, keys_of)
    if not others:
        return None
    mine = keys_of(run.current)
    shared = sorted(mine.intersection(*[keys_of(chunk) for chunk in others[:1]]))
    target, family, identity = shared[0].split("/", 2)
    names = " and by ".join(chunk.label for chunk in others)
    return (
        f"{family} {identity} on {target} is declared by {run.current.label} and by {names}. One object "
        "takes one declaration, or the two would fight over it (and each plans to create it): remove all "
        "but one."
    )
