"""Passwords out of everything iolab shows or stores: the one redaction function.

A DSN may carry a password in its userinfo (``postgresql://user:PW@host/db``, also with ``@``
inside the password), as a query parameter (``?password=PW``, ``&passwd=PW``, ``sslpassword``)
or in libpq's key=value form (``host=h password=PW`` or ``password='P W'``). :func:`redact`
removes each of them from any text; the DSN parser builds the DSN it shows and connects with
from the same rules (:mod:`iolab.engines.external`), and the CLI and the run recorder pass every
message through :func:`redact` before printing or storing it.
"""

from __future__ import annotations

import re

SECRET_KEYS = ("password", "passwd", "pwd", "sslpassword")
HIDDEN = "***"

# scheme://user:password@ : the password runs to the last "@" before the end of the token,
# so a password holding "@" (or "/", "?") is hidden whole.
_USERINFO = re.compile(
    r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^\s:@/?#'\"]*):(?P<secret>[^\s'\"]*)@"
)
# password=... in a URL query (up to & or the end) or in key=value form (quoted, or a word)
_KEYVALUE = re.compile(
    r"(?P<key>\b(?:" + "|".join(SECRET_KEYS) + r"))(?P<eq>\s*=\s*)"
    r"(?P<secret>'(?:[^'\\]|\\.)*'?|[^\s&'\"#]+)",
    re.IGNORECASE,
)


def redact(text: str) -> str:
    """``text`` with every DSN password form replaced: userinfo passwords are dropped
    (``scheme://user@host``), ``password=...`` values become ``***``."""
    text = _USERINFO.sub(lambda m: f"{m['head']}{m['user']}@", text)
    return _KEYVALUE.sub(lambda m: f"{m['key']}{m['eq']}{HIDDEN}", text)


def is_secret_key(key: str) -> bool:
    """A query or key=value parameter whose value is a password."""
    return key.strip().lower() in SECRET_KEYS
