"""A backup job's schedule by meaning (``salt_proxmox.backup.schedule``), ported from proxmox-time
(``proxmox-time/src/calendar_event.rs`` ``parse_calendar_event_incomplete``, ``parse_time_spec``,
``parse_date_spec``; ``parse_helpers.rs`` ``parse_time_comp``; ``week_days.rs``
``parse_weekdays_range``). PVE stores a schedule as sent (pve-manager ``PVE/API2/Backup.pm``), so the
product compares what two spellings mean; the property tests write one meaning many ways."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from salt_proxmox.backup.schedule import DAY_NAMES, ScheduleError, normalise, problem, same

# proxmox-time's own test vectors (proxmox-time/src/test.rs): each parses.
VALID = [
    "0", "*", "*:0", "*:*", "*:*:*", "*:3:5", "mon *:*", "mon 2:*", "mon 2:50", "tue", "4..10/2:0",
    "5,10:4,8", "10,5:8,4", "6,4..10:23,5/5", "4..10,6:5/5,23", "daily", "5/2:0", "1:0", "2020-07-31",
    "02-28", "02-29", "1965/5-01-01", "2020-7..9-2/2", "2020,2021-12-31", "minutely", "hourly", "weekly",
    "monthly", "quarterly", "semiannually", "semi-annually", "yearly", "annually", "mon,wed..fri",
    "fri..mon", "MON", "monDay", "Tuesday", "mon,tue,wednesday,fri..sat", "02:00 UTC", "02:00UTC",
]  # fmt: skip
# Refused by the same parser.
INVALID = [
    "Daily",
    "DAILY",
    "",
    "UTC",
    "24:00:61",
    "2:00 ",
    " 2:00",
    "*/0",
    "10..4:00",
    "mon,",
    "someday",
    "2:00:",
]


@pytest.mark.parametrize("text", VALID)
def test_proxmox_times_own_examples_parse(text):
    normalise(text)


@pytest.mark.parametrize("text", INVALID)
def test_what_proxmox_time_refuses_is_refused(text):
    with pytest.raises(ScheduleError):
        normalise(text)
    assert problem(text) is not None


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("25:00", "*:25"),  # 25 is no hour (parse_time_comp(24)): minute 25 of every hour
        ("25:00", "*-*-* *:25:00"),
        ("daily", "00:00"),  # calendar_event.rs: daily is hour 0, minute 0, second 0
        ("hourly", "*:00"),
        ("hourly", "0"),  # minute-only syntax (test.rs "0": the next hour)
        ("weekly", "mon 0:0"),
        ("monthly", "*-*-01 00:00:00"),
        ("mon..fri 02:00", "mon,tue,wed,thu,fri 2:0"),
        ("fri..mon", "fri,sat,sun,mon"),  # a range past Sunday wraps (parse_weekdays_range)
        ("mon..sun 02:00", "02:00"),  # all seven days is every day (compute_next_event: is_all)
        ("*/15", "0,15,30,45"),
        ("0/15", "00..59/15"),
        ("02:00 UTC", "2:00UTC"),
    ],
)
def test_spellings_that_mean_the_same_normalise_equal(left, right):
    assert normalise(left) == normalise(right)
    assert same(left, right)


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("02:00", "02:00 UTC"),  # the UTC suffix: UTC rather than the node's local time
        ("02:00", "14:00"),
        ("mon 02:00", "tue 02:00"),
        ("2:30", "2:3"),
        ("daily", "hourly"),
    ],
)
def test_spellings_that_mean_otherwise_differ(left, right):
    assert normalise(left) != normalise(right)
    assert not same(left, right)


def test_a_text_pve_refuses_is_never_the_same_as_another():
    assert not same("Daily", "Daily")


# ----------------------------------------------------------------------------------------------
# Property tests: one meaning (weekdays, hours, minutes, UTC) written several ways.

_DAY_SPELLINGS = {
    0: ("mon", "monday", "MON", "Monday"),
    1: ("tue", "tuesday", "TUE"),
    2: ("wed", "wednesday", "Wed"),
    3: ("thu", "thursday", "THU"),
    4: ("fri", "friday", "Fri"),
    5: ("sat", "saturday", "SAT"),
    6: ("sun", "sunday", "Sun"),
}


def _values(draw, values: list[int], pad: bool) -> str:
    """A comma list of ``values`` in a drawn order, runs of three or more written as a..b ranges."""
    ordered = sorted(values)
    parts, at = [], 0
    while at < len(ordered):
        end = at
        while end + 1 < len(ordered) and ordered[end + 1] == ordered[end] + 1:
            end += 1
        fmt = (lambda n: f"{n:02d}") if pad else str
        if end - at >= 2 and draw(st.booleans()):
            parts.append(f"{fmt(ordered[at])}..{fmt(ordered[end])}")
        else:
            parts.extend(fmt(n) for n in ordered[at : end + 1])
        at = end + 1
    return ",".join(draw(st.permutations(parts)))


@st.composite
def spellings(draw):
    """Two spellings of one drawn event, and its parts."""
    days = draw(st.sets(st.integers(0, 6), max_size=7))
    hours = draw(st.lists(st.integers(0, 23), min_size=1, max_size=4, unique=True))
    minutes = draw(st.lists(st.integers(0, 59), min_size=1, max_size=4, unique=True))
    utc = draw(st.booleans())
    texts = []
    for _ in range(2):
        day_text = ",".join(
            draw(st.sampled_from(_DAY_SPELLINGS[d])) for d in draw(st.permutations(sorted(days)))
        )
        if len(days) == 7 and draw(st.booleans()):
            day_text = draw(st.sampled_from(["mon..sun", ""]))
        time = f"{_values(draw, hours, draw(st.booleans()))}:{_values(draw, minutes, draw(st.booleans()))}"
        if draw(st.booleans()):
            time += draw(st.sampled_from([":0", ":00"]))
        text = f"{day_text} {time}" if day_text else time
        if utc:
            text += draw(st.sampled_from([" UTC", "UTC", "   UTC"]))
        texts.append(text)
    return texts, (days, hours, minutes, utc)


@given(spellings())
def test_equivalent_spellings_normalise_equal(drawn):
    (left, right), (days, hours, minutes, utc) = drawn
    meaning = normalise(left)
    assert meaning == normalise(right), (left, right)
    assert meaning.utc is utc
    assert meaning.days == (frozenset(days) or frozenset(range(7)))
    assert meaning.hour == (None if len(hours) == 24 else frozenset(hours))
    assert meaning.minute == (None if len(minutes) == 60 else frozenset(minutes))
    assert meaning.second == frozenset({0})


@given(spellings())
def test_the_utc_suffix_always_changes_the_meaning(drawn):
    (text, _), (_, _, _, utc) = drawn
    other = text.removesuffix("UTC").rstrip(" ") if utc else f"{text} UTC"
    assert normalise(text) != normalise(other)


@given(st.integers(24, 59), st.integers(0, 59))
def test_an_hour_past_23_is_read_as_the_minute(minute, second):
    """parse_time_spec: a first number of 24 or more is no hour, so it is the minute of every hour."""
    meaning = normalise(f"{minute}:{second}")
    assert (meaning.hour, meaning.minute, meaning.second) == (None, frozenset({minute}), frozenset({second}))


@given(st.text(alphabet="0123456789:,.*/- monUTCdaily", max_size=20))
def test_any_text_either_parses_or_is_refused_never_crashes(text):
    with contextlib.suppress(ScheduleError):
        normalise(text)


def test_day_names_are_pves_order():
    assert DAY_NAMES == ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
