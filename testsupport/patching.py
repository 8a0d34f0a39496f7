"""JSON patches (RFC 6902) applied as the API server applies them, for the in-memory clusters
the component tests run their loops against (tests/test_retention.py, tests/test_restarter.py)."""

import copy
from typing import Any

from kubernetes.client.exceptions import ApiException


def refused(status: int) -> ApiException:
    """The API server's refusal with this HTTP status."""
    return ApiException(status=status, reason=f"HTTP {status}")


def apply_patch(document: dict[str, Any], patch: list[dict[str, Any]]) -> dict[str, Any]:
    """RFC 6902 as the API server applies it: all operations or none; a failed `test`, or a
    path that does not resolve, is a 422."""
    doc = copy.deepcopy(document)
    for operation in patch:
        *parents, last = [
            key.replace("~1", "/").replace("~0", "~") for key in operation["path"].split("/")[1:]
        ]
        try:
            target: Any = doc
            for key in parents:
                target = target[int(key)] if isinstance(target, list) else target[key]
            index: Any = int(last) if isinstance(target, list) else last
            if operation["op"] == "test" and target[index] != operation["value"]:
                raise refused(422)
            if operation["op"] in ("remove", "replace"):  # replace: remove, then add
                del target[index]
            if operation["op"] in ("add", "replace"):
                if isinstance(target, list):
                    target.insert(index, operation["value"])
                else:
                    target[index] = operation["value"]
        except (KeyError, IndexError, TypeError) as exc:
            raise refused(422) from exc
    return doc
