"""The shapes the conformance examples are written in (``Examples``) and the helpers building the usual
ones, shared by ``examples`` and ``examples_node`` (a module of its own, so neither imports the other's
half-built module)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Examples:
    """Declarations of one kind as its state takes them (``{"name": ..., <argument>: ...}``), for a
    suite that runs every family through the same promises: ``create`` a new object, ``update`` it
    (a changed value), ``clear`` a value it holds (``None``/``""``: back to PVE's default), ``delete``
    it (its absent state's arguments, ``removal: destroy``), and ``bad``: inputs refused by name
    before anything is written (``{what: (state function, declaration, the key named)}``)."""

    create: Mapping[str, object]
    update: Mapping[str, object]
    clear: Mapping[str, object]
    delete: Mapping[str, object]
    bad: Mapping[str, tuple[str, Mapping[str, object], str]]
    #: States of the family declared after each of the above in the same run, as ``(state function,
    #: declaration)``: the node's or SDN apply that makes a staged change live, whose writes the
    #: declaration's plan must name.
    applies: tuple[tuple[str, Mapping[str, object]], ...] = ()
    #: States applied once before the examples run, as ``(state module, state function, declaration)``:
    #: the objects an example needs to exist (an SDN vnet's zone), which the suite itself does not judge.
    given: tuple[tuple[str, str, Mapping[str, object]], ...] = ()


#: A Salt keyword (``unless`` runs a command before the state), a misspelt ``ensure`` and ``removal``,
#: and a key the family does not have: what every family refuses by name with nothing written.
def _bad(
    present: Mapping[str, object], absent: Mapping[str, object], fun: str = "present", gone: str = "absent"
) -> dict:
    return {
        "salt keyword": (fun, {**present, "unless": "true"}, "unless"),
        "unknown key": (fun, {**present, "colour": "red"}, "colour"),
        "misspelt ensure": (fun, {**present, "ensure": "absnet"}, "ensure"),
        "misspelt removal": (gone, {**absent, "removal": "destory"}, "removal"),
    }


def _with_bad(examples: Examples, bad: Mapping[str, tuple[str, Mapping[str, object], str]]) -> Examples:
    """``examples`` with more inputs refused by name."""
    return replace(examples, bad={**examples.bad, **bad})


def _simple(
    create: Mapping[str, object],
    update: Mapping[str, object],
    clear: Mapping[str, object],
    wrong: Mapping[str, object],
    identity: tuple[str, ...] = ("name",),
) -> Examples:
    """The examples of a simple object kind (``present``/``absent``): ``create``, and ``update``,
    ``clear`` and a ``wrong`` type as the keys they change; ``identity``: the keys its absent state
    takes."""
    absent = {key: create[key] for key in identity}
    return Examples(
        create=create,
        update={**create, **update},
        clear={**create, **clear},
        delete={**absent, "removal": "destroy"},
        bad={**_bad(create, absent), "wrong type": ("present", {**create, **wrong}, next(iter(wrong)))},
    )
