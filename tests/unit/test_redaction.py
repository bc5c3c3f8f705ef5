"""The one redaction function: every DSN password form out of any text."""

from __future__ import annotations

import pytest

from iolab.engines.external import parse_dsn
from iolab.errors import BadInput
from iolab.redaction import redact


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("postgresql://u:pw@h/db", "postgresql://u@h/db"),
        ("postgresql://u:sec@ret@h:5/db", "postgresql://u@h:5/db"),
        ("postgresql://:pw@h/db", "postgresql://@h/db"),
        (
            "postgresql://u@h/db?sslmode=require&password=pw",
            "postgresql://u@h/db?sslmode=require&password=***",
        ),
        ("mysql://u@h/db?passwd=pw&pwd=x", "mysql://u@h/db?passwd=***&pwd=***"),
        ("host=h password=pw dbname=d", "host=h password=*** dbname=d"),
        ("host=h password = 'p w\\'x' dbname=d", "host=h password = *** dbname=d"),
        (
            "error: cannot connect to mysql://root:pw@localhost/iolab: refused",
            "error: cannot connect to mysql://root@localhost/iolab: refused",
        ),
        ("password authentication failed for user u", "password authentication failed for user u"),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
    ],
)
def test_redact(text: str, shown: str) -> None:
    assert redact(text) == shown


def test_parse_dsn_takes_every_password_form_out_of_the_url() -> None:
    t = parse_dsn("postgresql://u:a%40b@h:6/db?sslmode=require&password=ignored&sslpassword=s")
    assert t.redacted == "postgresql://u@h:6/db?sslmode=require"
    assert (t.password, t.ssl_password) == ("a@b", "s")
    q = parse_dsn("postgresql://u@h/db?password=q%20w")
    assert (q.redacted, q.password) == ("postgresql://u@h/db", "q w")
    m = parse_dsn("mysql://u@h/db?unix_socket=/s&passwd=m")
    assert (m.redacted, m.password, m.unix_socket) == ("mysql://u@h/db?unix_socket=/s", "m", "/s")
    at = parse_dsn("mysql://u:x@y@h/db")
    assert (at.redacted, at.password, at.host) == ("mysql://u@h/db", "x@y", "h")
    assert "x@y" not in repr(at)


@pytest.mark.parametrize(
    "text",
    [
        "postgresql://u:se%ZZcret@h/db",
        "postgresql://u:sl/ash@h/db",
        "postgresql://u:q?uery@h/db",
        "host=h password=secret",
        "oracle://u:secret@h/db",
    ],
)
def test_refused_dsns_never_show_the_password(text: str) -> None:
    with pytest.raises(BadInput) as bad:
        parse_dsn(text)
    message = str(bad.value)
    assert message.startswith("--dsn: ")
    for piece in ("secret", "ZZ", "ash", "uery"):
        assert piece not in message
