"""What a state reports: the Salt return's ``result``, ``changes`` and ``comment`` lines.

Every family's plan/apply returns one ``Outcome``; the Salt state module only adds ``name``.
``result`` is True (done or nothing to do), None (``test=True`` with changes to make) or False
(refused or failed).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from salt_proxmox.errors import DeclarationError


@dataclass
class Outcome:
    """A state's verdict. ``comment`` holds one line per decision."""

    result: bool | None = True
    changes: dict = field(default_factory=dict)
    comment: list[str] = field(default_factory=list)
    #: What the run as a whole has to say (backup coverage), given by one state of the run: the return
    #: carries it as ``notes`` (the plan outputter prints it once, after the summary) and in the comment.
    run_notes: list[str] = field(default_factory=list)

    def fail(self, *lines: str) -> Outcome:
        """Mark failed, adding each line to the comment."""
        self.result = False
        self.comment.extend(lines)
        return self

    def refuse(self, exc: DeclarationError) -> Outcome:
        """Fail on a declaration found wrong before any write: one ``Refused:`` line per problem,
        then ``Nothing was written.``"""
        return self.fail(*exc.refusals(), "Nothing was written.")

    def salt_return(self, name: str) -> dict:
        """The dict a Salt state function returns (with ``notes`` when the state carries run notes)."""
        ret = {
            "name": name,
            "result": self.result,
            "changes": self.changes,
            "comment": "\n".join([*self.comment, *self.run_notes]),
        }
        if self.run_notes:
            ret["notes"] = list(self.run_notes)
        return ret


def text_diff(old: str | None, new: str | None, old_label: str, new_label: str) -> str:
    """A unified diff of two texts, as a multi-line string for a return's ``changes``; a missing side
    (None) is ``/dev/null``, as ``diff -u`` names it. A last line without newline is marked as
    ``diff`` marks it, so a trailing newline is a visible change."""
    lines = difflib.unified_diff(
        (old or "").splitlines(keepends=True),
        (new or "").splitlines(keepends=True),
        fromfile=old_label if old is not None else "/dev/null",
        tofile=new_label if new is not None else "/dev/null",
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def forget_ownership(outcome: Outcome, ownership, key: str, row: dict | None, subject: str, test: bool,
                     already_absent: bool = False) -> Outcome:  # fmt: skip
    """Drop ``key``'s ownership row and say so: what ``absent`` does under ``removal: retain``, and
    after finding an object already gone. Nothing but the row is touched; under ``test`` not even
    that (result None)."""
    if row is None:
        outcome.comment.append(f"{subject} is not recorded as ours; nothing to forget")
        return outcome
    outcome.changes = {"ownership": {"old": row.get("phase"), "new": None}}
    state = "is already absent" if already_absent else "is retained untouched"
    if test:
        outcome.result = None
        outcome.comment.append(f"{subject} {state}; would forget ownership")
        return outcome
    ownership.forget(key)
    outcome.comment.append(f"{subject} {state}; ownership forgotten")
    return outcome


def record_ownership(outcome: Outcome, ownership, key: str, state_id: str, stored: dict, subject: str,
                     test: bool) -> Outcome:  # fmt: skip
    """Record ``key`` as ours (``stored``: the row's declaration) and say so: an object that is as
    declared and not yet ours (an ``adopt: true``, a row lost after a write). Nothing but the row is
    written; under ``test`` not even that (result None). Raises what ``ownership.mark_owned`` raises."""
    row = ownership.row(key)
    outcome.changes["ownership"] = {"old": (row or {}).get("phase"), "new": "owned"}
    if test:
        outcome.result = None
        outcome.comment.append(f"{subject} is as declared; would record it as ours")
        return outcome
    ownership.mark_owned(key, state_id, stored)
    outcome.comment.append(f"{subject} is as declared; recorded as ours")
    return outcome
