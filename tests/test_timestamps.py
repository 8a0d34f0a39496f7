"""Table tests of Kubernetes timestamps: parsed leniently, written as the API server does."""

from datetime import UTC, datetime, timedelta, timezone

import pytest

from hooks.core.timestamps import earliest, format_time, latest, moment, parse_time

T = datetime(2026, 3, 1, 12, 0, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("2026-03-01T12:00:05Z", T),
        ("2026-03-01T12:00:05.987654Z", T),  # second precision, as Kubernetes stores
        ("2026-03-01T13:00:05+01:00", T),  # any offset, normalised to UTC
        ("2026-03-01T12:00:05", T),  # no offset: UTC
        ("", None),
        ("yesterday", None),
        ("2026-13-01T00:00:00Z", None),
        (None, None),
        (1767225600, None),
        (["2026-03-01T12:00:05Z"], None),
        # Readable, but its UTC moment is outside the years 1 to 9999: no moment, no exception.
        ("0001-01-01T00:00:00+01:00", None),
        ("9999-12-31T23:59:59-01:00", None),
        ("0001-01-01T01:00:00+01:00", datetime(1, 1, 1, tzinfo=UTC)),
    ],
)
def test_parse_time(value: object, parsed: datetime | None) -> None:
    assert parse_time(value) == parsed


@pytest.mark.parametrize(
    ("moment", "text"),
    [
        (T, "2026-03-01T12:00:05Z"),
        (T.replace(microsecond=999999), "2026-03-01T12:00:05Z"),
        (T.astimezone(timezone(timedelta(hours=-5))), "2026-03-01T12:00:05Z"),
    ],
)
def test_format_time(moment: datetime, text: str) -> None:
    assert format_time(moment) == text
    assert parse_time(text) == T


LATER = T + timedelta(minutes=1)


@pytest.mark.parametrize(
    ("moments", "first", "last"),
    [
        ((), None, None),
        ((None, None), None, None),
        ((T,), T, T),
        ((LATER, None, T), T, LATER),
    ],
)
def test_earliest_and_latest_ignore_unknown_moments(
    moments: tuple[datetime | None, ...], first: datetime | None, last: datetime | None
) -> None:
    assert earliest(*moments) == first
    assert latest(*moments) == last


@pytest.mark.parametrize(
    "value",
    [
        datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1))),
        datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone(timedelta(hours=-1))),
    ],
)
def test_a_decoded_moment_outside_the_utc_years_is_unknown(value: datetime) -> None:
    """msgspec decodes such a child timestamp (hooks/core/children.py); as UTC it has no year."""
    assert moment(value) is None
