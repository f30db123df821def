"""The contract every family passes (docs/design.md §2 "The contract every family passes").

Parametrized by ``salt_proxmox.registry.FAMILIES`` alone: every kind of a family is run through its
``Examples`` (``tests/conformance/examples.py``, by the kind's name)
(create, update, clear, delete, bad input, and the applies declared with them), through its ``_states``
module, ``proxmox.run_state``, its execution-module function and the library, as a Salt state run calls
them (``tests.support.saltworld``), against a fresh fake cluster (``fresh_cluster``) and OpenBao's dev
server. Every family keeps these promises:

1. plan, apply, plan: the plan writes nothing; the apply sends the writes the plan listed, no more and
   none other (a removal's reload or SDN commit included); the plan after it has no changes and writes
   nothing (``contract.write_problems`` maps a plan's changes to writes, in one place);
2. an unknown key, a Salt keyword (through the formula), a misspelt ``ensure``/``removal`` and a wrong
   type are refused naming the key, with nothing written and no ownership row;
3. a 403, a 500 and a malformed answer on the object's reads are never absence: the state fails,
   nothing is written, the rows file is unchanged;
4. an answer lost after a write (a proxy's 502 once the server acted) is uncertain, never "Nothing was
   written";
5. two states of one run declaring one object are both refused;
6. no credential reaches a return, a log line, the rows file, grains or ``__context__``.

A family lacking what a promise needs (``contract.missing``) fails its tests: none is skipped.
Point ``PYTHONPATH`` at another checkout (``--import-mode=append``, from outside the worktree) to run
the contract on that checkout's library, modules, states and formula.
"""
