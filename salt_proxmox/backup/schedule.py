"""A backup job's ``schedule`` by meaning: PVE's calendar-event parser, ported as a pure normaliser.

PVE keeps a job's ``schedule`` exactly as it was sent (pve-manager ``PVE/API2/Backup.pm``
``create_job``/``update_job`` store ``$param->{schedule}``; ``jobs.cfg`` holds the text) and only
checks it against the ``pve-calendar-event`` format, which is proxmox-time's parser
(``Proxmox::RS::CalendarEvent->new``, Rust ``proxmox-time/src/calendar_event.rs``
``parse_calendar_event_incomplete``). So ``02:00``, ``2:00`` and ``*-*-* 02:00:00`` are one
schedule written three ways, and a schedule is compared by what it means, never by its text.

``normalise`` follows that parser step by step, backtracking where nom's ``opt`` and
``separated_list1`` backtrack (``parse_time_spec``, ``parse_date_spec``,
``parse_date_time_comp_list``, ``parse_time_comp`` in ``parse_helpers.rs``, ``parse_weekdays_range``
in ``week_days.rs``):

- a trailing ``UTC`` (spaces before it dropped) makes the event UTC; without it the node's local
  time: ``02:00`` and ``02:00 UTC`` are different schedules;
- ``minutely``, ``hourly``, ``daily``, ``weekly``, ``monthly``, ``yearly``/``annually``,
  ``quarterly`` and ``semiannually``/``semi-annually`` are exact, lower-case words: ``Daily`` is
  read as a weekday and refused;
- weekdays (``mon``/``monday``, any case), lists (``mon,wed``) and ranges (``mon..fri``;
  ``fri..mon`` wraps over the week end); none, or all seven, is every day;
- a date ``[year-]month-day`` and a time ``[hour:]minute[:second]``, each field a ``*``, a
  ``*/step``, or a comma list of values, ``a..b`` ranges and ``a/step``/``a..b/step`` repeats;
  a value must be below its field's bound (hour 24, minute and second 60, month 13, day 32, year
  2200), else the parser tries the text as the next field: ``25:00`` is minute 25 and second 0 of
  every hour, not an hour 25;
- no time given means ``00:00:00``; a time without seconds means second 0; without hours, every
  hour.

The meaning (``Schedule``) is each field as the set of values it matches (``None`` for every
value: ``*``, or a list naming them all), the weekdays as a set (empty: every day) and the UTC
flag: what ``compute_next_event`` consults (``DateTimeValue::contains``/``find_next`` agree with
that set), so two texts with equal ``Schedule`` fire at the same instants.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: ``week_days.rs`` ``parse_weekday``: the names it takes (lower-cased input), Monday first.
WEEKDAYS = {
    "mon": 0, "monday": 0, "tue": 1, "tuesday": 1, "wed": 2, "wednesday": 2, "thu": 3, "thursday": 3,
    "fri": 4, "friday": 4, "sat": 5, "saturday": 5, "sun": 6, "sunday": 6,
}  # fmt: skip
DAY_NAMES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")

#: The fields in the order ``compute_next_event`` walks them, with the values each can match in a
#: calendar (a parsed value outside it never matches: month 0, day 0) and the parser's bound.
FIELDS = ("year", "month", "day", "hour", "minute", "second")
DOMAINS = {
    "year": range(0, 10000),
    "month": range(1, 13),
    "day": range(1, 32),
    "hour": range(0, 24),
    "minute": range(0, 60),
    "second": range(0, 60),
}
#: ``parse_time_comp(max)``: a value must be below ``max`` (``parse_date_spec``, ``parse_time_spec``).
BOUNDS = {"year": 2200, "month": 13, "day": 32, "hour": 24, "minute": 60, "second": 60}
#: ``parse_date_time_comp_list(start, max)``: where ``*/step`` starts counting.
STARTS = {"year": 0, "month": 1, "day": 1, "hour": 0, "minute": 0, "second": 0}

_DIGITS = re.compile(r"[0-9]+")
_ALPHA = re.compile(r"[A-Za-z]+")


class ScheduleError(ValueError):
    """A text proxmox-time does not parse as a calendar event (PVE: ``value does not match the regex
    pattern``/``unable to parse calendar event``, format ``pve-calendar-event``)."""


class _NoMatch(Exception):
    """nom's ``Err::Error``: this parser did not match here (the caller may backtrack)."""


#: One field value as the parser builds it: ``("single", v)``, ``("range", a, b)`` or
#: ``("repeat", start, step, end or None)`` (``date_time_value.rs`` ``DateTimeValue``).
Value = tuple


@dataclass(frozen=True)
class Schedule:
    """What a calendar event means: ``utc``; ``days`` the weekdays it fires on (0 Monday … 6 Sunday;
    all seven when the text names none); each of ``FIELDS`` a frozenset of the values it matches, or
    None for every value."""

    utc: bool
    days: frozenset[int]
    year: frozenset[int] | None
    month: frozenset[int] | None
    day: frozenset[int] | None
    hour: frozenset[int] | None
    minute: frozenset[int] | None
    second: frozenset[int] | None

    def __str__(self) -> str:
        """The meaning in one canonical line (``mon..fri *-*-* 02:00:00 UTC`` style, every field
        spelled out), for plans and tests; not a text sent to PVE."""
        days = "" if len(self.days) == 7 else ",".join(DAY_NAMES[d] for d in sorted(self.days)) + " "
        date = "-".join(_shown(getattr(self, name)) for name in ("year", "month", "day"))
        time = ":".join(_shown(getattr(self, name)) for name in ("hour", "minute", "second"))
        return f"{days}{date} {time}{' UTC' if self.utc else ''}"


def _shown(values: frozenset[int] | None) -> str:
    if values is None:
        return "*"
    if not values:
        return "(never)"
    ordered, parts = sorted(values), []
    start = prev = ordered[0]
    for value in [*ordered[1:], None]:
        if value is not None and value == prev + 1:
            prev = value
            continue
        parts.append(f"{start:02d}" if start == prev else f"{start:02d}..{prev:02d}")
        if value is not None:
            start = prev = value
    return ",".join(parts)


# ------------------------------------------------------------------------------------------ parser
# Each parser takes the text and a position and returns (result, new position), or raises _NoMatch.


def _time_comp(text: str, at: int, bound: int) -> tuple[int, int]:
    """``parse_time_comp(max)``: digits, as a u32 below ``bound``."""
    match = _DIGITS.match(text, at)
    if match is None:
        raise _NoMatch
    value = int(match.group())
    if value >= 2**32 or value >= bound:
        raise _NoMatch
    return value, match.end()


def _comp(text: str, at: int, bound: int) -> tuple[Value, int]:
    """``parse_date_time_comp``: ``v``, ``v..e``, ``v/r`` or ``v..e/r``. A range whose start is past
    its end, or a ``/`` without a number after it, fails outright (no backtracking past them)."""
    value, at = _time_comp(text, at, bound)
    if text.startswith("..", at):
        try:
            end, after = _time_comp(text, at + 2, bound)
        except _NoMatch:
            end = None
        if end is not None:
            if value > end:
                raise _NoMatch
            at = after
            if text.startswith("/", at):
                step, at = _time_comp(text, at + 1, bound)
                return ("repeat", value, step, end), at
            return ("range", value, end), at
    if text.startswith("/", at):
        step, at = _time_comp(text, at + 1, bound)
        return ("repeat", value, step, None), at
    return ("single", value), at


def _separated(text: str, at: int, item) -> tuple[list, int]:
    """nom's ``separated_list1(tag(","), item)``: one item or more; a comma not followed by an item
    ends the list before that comma."""
    first, at = item(text, at)
    found = [first]
    while text.startswith(",", at):
        try:
            more, after = item(text, at + 1)
        except _NoMatch:
            break
        found.append(more)
        at = after
    return found, at


def _comp_list(text: str, at: int, field: str) -> tuple[list[Value] | None, int]:
    """``parse_date_time_comp_list(start, max)``: ``*`` (every value: None), ``*/step`` (a repeat from
    the field's start; ``*/0`` is ``*`` followed by the unparsed ``/0``), or a list."""
    bound = BOUNDS[field]
    if text.startswith("*", at):
        rest = at + 1
        if text.startswith("/", rest):
            step, after = _time_comp(text, rest + 1, bound)
            if step > 0:
                return [("repeat", STARTS[field], step, None)], after
        return None, rest
    return _separated(text, at, lambda t, a: _comp(t, a, bound))


def _weekday(text: str, at: int) -> tuple[int, int]:
    match = _ALPHA.match(text, at)
    if match is None or match.group().lower() not in WEEKDAYS:
        raise _NoMatch
    return WEEKDAYS[match.group().lower()], match.end()


def _weekday_range(text: str, at: int) -> tuple[frozenset[int], int]:
    """``parse_weekdays_range``: a day, or ``a..b`` (wrapping over Sunday when ``a`` comes after ``b``)."""
    start, at = _weekday(text, at)
    if text.startswith("..", at):
        try:
            end, after = _weekday(text, at + 2)
        except _NoMatch:
            return frozenset({start}), at
        if start > end:
            return frozenset(range(start, 7)) | frozenset(range(0, end + 1)), after
        return frozenset(range(start, end + 1)), after
    return frozenset({start}), at


def _spaces(text: str, at: int) -> int:
    while text.startswith(" ", at) or text.startswith("\t", at):
        at += 1
    return at


def _date_spec(text: str, at: int) -> tuple[dict, int]:
    """``parse_date_spec``: ``year-month-day``, else ``month-day``."""
    try:
        year, pos = _comp_list(text, at, "year")
        if not text.startswith("-", pos):
            raise _NoMatch
        month, pos = _comp_list(text, pos + 1, "month")
        if not text.startswith("-", pos):
            raise _NoMatch
        day, pos = _comp_list(text, pos + 1, "day")
        return {"year": year, "month": month, "day": day}, pos
    except _NoMatch:
        pass
    month, pos = _comp_list(text, at, "month")
    if not text.startswith("-", pos):
        raise _NoMatch
    day, pos = _comp_list(text, pos + 1, "day")
    return {"year": None, "month": month, "day": day}, pos


def _time_spec(text: str, at: int) -> tuple[dict, int]:
    """``parse_time_spec``: ``[hour:]minute[:second]``; no hour is every hour, no second is 0."""
    hour: list[Value] | None = None
    try:
        hours, pos = _comp_list(text, at, "hour")
        if not text.startswith(":", pos):
            raise _NoMatch
        hour, at = hours, pos + 1
    except _NoMatch:
        hour = None
    minute, at = _comp_list(text, at, "minute")
    second: list[Value] | None = [("single", 0)]
    if text.startswith(":", at):
        try:
            second, at = _comp_list(text, at + 1, "second")
        except _NoMatch:
            second = [("single", 0)]
    return {"hour": hour, "minute": minute, "second": second}, at


_ZERO = [("single", 0)]

#: ``parse_calendar_event_incomplete``'s keywords: (hour, minute, second, day, month, weekdays).
KEYWORDS: dict[str, dict] = {
    "minutely": {"second": _ZERO},
    "hourly": {"minute": _ZERO, "second": _ZERO},
    "daily": {"hour": _ZERO, "minute": _ZERO, "second": _ZERO},
    "weekly": {"hour": _ZERO, "minute": _ZERO, "second": _ZERO, "days": frozenset({0})},
    "monthly": {"hour": _ZERO, "minute": _ZERO, "second": _ZERO, "day": [("single", 1)]},
    "yearly": {
        "hour": _ZERO, "minute": _ZERO, "second": _ZERO, "day": [("single", 1)], "month": [("single", 1)],
    },
    "quarterly": {
        "hour": _ZERO, "minute": _ZERO, "second": _ZERO, "day": [("single", 1)],
        "month": [("single", 1), ("single", 4), ("single", 7), ("single", 10)],
    },
    "semiannually": {
        "hour": _ZERO, "minute": _ZERO, "second": _ZERO, "day": [("single", 1)],
        "month": [("single", 1), ("single", 7)],
    },
}  # fmt: skip
KEYWORDS["annually"] = KEYWORDS["yearly"]
KEYWORDS["semi-annually"] = KEYWORDS["semiannually"]


def _parsed(text: str) -> tuple[bool, frozenset[int], dict]:
    """``(utc, weekdays, {field: values or None})`` of ``text``. Raises ScheduleError."""
    utc = False
    if text.endswith("UTC"):
        utc, text = True, text[:-3].rstrip(" ")
    if text in KEYWORDS:  # only a text starting with a letter is looked up there
        fields = dict(KEYWORDS[text])
        days = fields.pop("days", frozenset())
        return utc, days, fields
    at, days, has = 0, frozenset(), False
    if text[:1].isascii() and text[:1].isalpha():
        try:
            ranges, at = _separated(text, 0, _weekday_range)
        except _NoMatch:
            raise ScheduleError(f"unable to parse calendar event at {text!r} - weekday") from None
        days, has = frozenset().union(*ranges), True
        at = _spaces(text, at)
    fields: dict = {}
    try:
        date, pos = _date_spec(text, at)
        fields.update(date)
        at, has = _spaces(text, pos), True
    except _NoMatch:
        pass
    try:
        time, at = _time_spec(text, at)
        fields.update(time)
        has = True
    except _NoMatch:
        fields.update({"hour": _ZERO, "minute": _ZERO, "second": _ZERO})
    if not has:
        raise ScheduleError("unable to parse calendar event - date or time specification")
    if at != len(text):
        raise ScheduleError(f"unable to parse calendar event at {text[at:]!r}")
    return utc, days, fields


def _matches(values: list[Value] | None, field: str) -> frozenset[int] | None:
    """The calendar values a field's list matches (``DateTimeValue::contains``); None for every one."""
    if values is None:
        return None
    domain = DOMAINS[field]
    found: set[int] = set()
    for value in values:
        kind = value[0]
        if kind == "single":
            found.add(value[1])
        elif kind == "range":
            found.update(range(value[1], value[2] + 1))
        else:
            start, step, end = value[1], value[2], value[3]
            last = domain.stop - 1 if end is None else end
            found.update(range(start, last + 1, step) if step > 0 else (start,))
    matched = frozenset(v for v in found if v in domain)
    return None if len(matched) == len(domain) else matched


def normalise(text: object) -> Schedule:
    """The meaning of calendar event ``text`` (module docstring). Raises ScheduleError for a text
    PVE's ``pve-calendar-event`` format refuses (or one that is not a string)."""
    if not isinstance(text, str):
        raise ScheduleError(f"expected a calendar event (text), got {type(text).__name__}")
    utc, days, fields = _parsed(text)
    return Schedule(
        utc=utc,
        days=days or frozenset(range(7)),
        **{field: _matches(fields.get(field), field) for field in FIELDS},
    )


def same(left: str, right: str) -> bool:
    """True when two calendar events mean the same (both must parse; a text that does not never
    equals another)."""
    try:
        return normalise(left) == normalise(right)
    except ScheduleError:
        return False


def problem(text: object) -> str | None:
    """None for a calendar event PVE takes, else the reason."""
    try:
        normalise(text)
    except ScheduleError as exc:
        return f"{exc} (PVE's pve-calendar-event format, proxmox-time calendar_event.rs)"
    return None
