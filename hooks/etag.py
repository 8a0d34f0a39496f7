"""ETags for Metacontroller's webhook cache (v4: `hooks.sync.webhook.etag`).

With the cache enabled Metacontroller keeps, per parent, the last answer that came with an
`ETag` header and sends that tag back as `If-None-Match`; a 304 makes it reuse the kept answer.
The hook is a pure function of the request body, the path, its own code and the settings the
answer depends on (the answer budget and the body limit: docs/security.md#the-answer-budget),
except for the clock: `now` enters a sync only through moments the answer then asks to be
called back at (activeDeadlineSeconds, a pod counting as lost with its node, an onStartFailure
wait: docs/run-policy.md#activedeadlineseconds). So:

- the tag is a BLAKE3 hash of the code version, the settings, the path and the body: a
  cryptographic hash, so that no request can be made to pass for another, at a third of
  SHA-256's cost (about 4 ms for the 25 MB request of a 1000-replica job, where SHA-256 took
  12); a hook restarted with another budget never reuses an answer of the old one (a job held
  by a lowered budget would stay held, from Metacontroller's cache, after it is put back);
- an answer that depends on the clock carries no tag: a sync answer with `resyncAfterSeconds`
  (such a moment still ahead; the answer changes when it passes, and the resync delay itself
  shrinks with every second). A cached answer of such a request would be reused with a stale
  moment. Once a deadline has passed, the answer (Failed, DeadlineExceeded) no longer changes
  with the clock and is tagged again.

Metacontroller keeps an entry when a later answer has no tag, and sends its tag again: the tag
of another body, which never matches, so the hook answers in full. The invariant the tests
keep (tests/test_etag.py): a sync answer without `resyncAfterSeconds` does not depend on `now`.
"""

import hashlib
from pathlib import Path

from blake3 import blake3

_PACKAGE = Path(__file__).resolve().parent


def _code_version() -> bytes:
    """A digest of the hook's own source: a new release never reuses an old release's answers."""
    digest = hashlib.sha256()
    for source in sorted(_PACKAGE.rglob("*.py")):
        digest.update(source.relative_to(_PACKAGE).as_posix().encode() + b"\0")
        digest.update(source.read_bytes() + b"\0")
    return digest.digest()


CODE_VERSION = _code_version()


def of(hook: str, body: bytes, settings: tuple[int, ...] = ()) -> str:
    """The tag of the answer to `body` on `hook` by a hook with these `settings`."""
    digest = blake3(CODE_VERSION)
    digest.update(",".join(map(str, settings)).encode() + b"\0")
    digest.update(hook.encode() + b"\0")
    digest.update(body)
    return f'"{digest.hexdigest()}"'


def matches(if_none_match: str | None, tag: str) -> bool:
    """Whether an `If-None-Match` header names `tag` (a list of tags, weak ones too)."""
    if not if_none_match:
        return False
    listed = (c.strip() for c in if_none_match.split(","))
    return any(c.removeprefix("W/") == tag for c in listed)


def tagged(resync_after_seconds: float | None) -> bool:
    """Whether an answer may carry its tag: not when it depends on the clock."""
    return resync_after_seconds is None
