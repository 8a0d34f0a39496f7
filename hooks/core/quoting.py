"""Text from a pod or the cluster as the hook quotes it and `mxjob` prints it: nothing in it a
terminal would interpret, and bounded (docs/security.md#text-from-pods).

The job's own image writes a termination message (the rejoin wait's too), the kubelet and the
schedulers write waiting and scheduling messages and reasons, and the hook's conditions, the
Events told of them and `mxjob`'s output carry them to someone's terminal, where an escape
sequence recolours, moves the cursor, retitles the window or sets the clipboard (OSC 52), and a
bidirectional override makes text read as other text. `clean` is the one cleaner of all of it:
escape sequences removed whole (CSI, OSC, two-character ones: no `[31m` left behind); control,
format (bidirectional, zero-width), surrogate and private-use characters dropped; tabs and line
breaks made spaces; with a limit, cut to that many bytes of UTF-8, ending in `…`.
"""

import re
import unicodedata

#: Escape sequences a terminal would interpret (CSI, OSC, two-character ones): removed whole,
#: not only their ESC, so that no `[31m` is left behind.
_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]?|\][^\x07\x1b\n]*(?:\x07|\x1b\\)?|[@-_]?)")
#: Unicode categories never kept: controls, format characters (bidirectional overrides,
#: zero-width ones), surrogates (no UTF-8 for them) and private use.
DROPPED = frozenset({"Cc", "Cf", "Cs", "Co"})
#: Controls and separators that break or space a line: each becomes one space.
_SPACES = frozenset("\t\n\v\f\r\x1c\x1d\x1e\x85\u2028\u2029")
CUT = "…"


def unsafe(char: str) -> bool:
    """Whether the character is one `clean` drops: a terminal may act on it."""
    return unicodedata.category(char) in DROPPED


def clean(text: str, limit: int | None = None) -> str:
    """`text` on one line, without what a terminal would interpret, trailing spaces dropped;
    with `limit` (3 or more), at most that many bytes of UTF-8 (a longer text keeps its start
    and ends in `…`), of which only the first twice `limit` characters are looked at: no more
    can be kept."""
    scanned = text if limit is None else text[: 2 * limit]
    if scanned.isascii() and scanned.isprintable():  # the usual text, checked in C
        kept = scanned.rstrip()
    else:
        kept = "".join(
            " " if char in _SPACES else char
            for char in _ESCAPES.sub("", scanned)
            if char in _SPACES or not unsafe(char)
        ).rstrip()
    if limit is None:
        return kept
    encoded = kept.encode()
    if len(text) <= len(scanned) and len(encoded) <= limit:
        return kept
    room = max(limit - len(CUT.encode()), 0)
    return encoded[:room].decode(errors="ignore").rstrip() + CUT
