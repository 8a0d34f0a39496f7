"""RFC 3339 timestamps as Kubernetes writes them (second precision, UTC, `Z`)."""

from datetime import UTC, datetime


def parse_time(value: object) -> datetime | None:
    """Parse a Kubernetes timestamp; anything absent or malformed is `None`."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment(parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC))


def format_time(moment: datetime) -> str:
    """Format as `2006-01-02T15:04:05Z`, the form the API server stores."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def latest(*moments: datetime | None) -> datetime | None:
    """The latest of the known moments, or `None` if none is known."""
    known = [m for m in moments if m is not None]
    return max(known) if known else None


def earliest(*moments: datetime | None) -> datetime | None:
    """The earliest of the known moments, or `None` if none is known."""
    known = [m for m in moments if m is not None]
    return min(known) if known else None


def moment(value: datetime | None) -> datetime | None:
    """A timestamp with its zone (as hooks/core/children.py decodes one) as the hook compares
    and writes moments: UTC, whole seconds; None when its UTC moment falls outside the years 1
    to 9999 (`0001-01-01T00:00:00+01:00`), which Python cannot hold."""
    if value is None or (value.tzinfo is UTC and not value.microsecond):
        return value
    try:
        return value.astimezone(UTC).replace(microsecond=0)
    except OverflowError:
        return None
