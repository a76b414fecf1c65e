"""The chroma backend's URL: ``chroma:PATH[?durability=sync&flush_interval=S&checkpoint_bytes=N&maintain_every=S]``.

`url_options` splits it into the path and the constructor's keyword options (``chroma://PATH``
also; PATH relative or absolute); a wrong scheme, an unknown option or a value of the wrong
type raises `InvalidInputError` naming it. The constructor checks the values' ranges.

>>> url_options("chroma:./memory?durability=sync&flush_interval=0.5")
('./memory', {'durability': 'sync', 'flush_interval': 0.5})
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from ...values.errors import InvalidInputError

__all__ = ["url_options"]


def url_options(url: str) -> tuple[str, dict[str, Any]]:
    """The path and the keyword options of a ``chroma:`` URL (see the module docstring)."""
    scheme, _, rest = url.partition(":")
    path, _, query = rest.partition("?")
    path = path[2:] if path.startswith("//") else path
    if scheme.lower() != "chroma" or not path:
        raise InvalidInputError(f"not a chroma backend URL: {url!r} (expected chroma:PATH)")
    options: dict[str, Any] = {}
    try:
        fields = parse_qs(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise InvalidInputError(f"malformed options in {url!r}") from None
    known = ("durability", "flush_interval", "checkpoint_bytes", "maintain_every")
    for key, values in fields.items():
        value = values[-1]
        if key not in known:
            raise InvalidInputError(f"unknown option {key!r} in {url!r} ({', '.join(known)})")
        try:
            if key == "durability":
                options[key] = value
            elif key == "flush_interval":
                options[key] = float(value)
            elif key == "checkpoint_bytes":
                options[key] = int(value)
            else:  # maintain_every
                options[key] = None if value.lower() in ("", "none", "off") else float(value)
        except ValueError:
            raise InvalidInputError(f"bad value {value!r} for {key!r} in {url!r}") from None
    return path, options
