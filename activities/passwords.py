"""``random_password``: the passwords the operator generates for the users it creates.

One definition for the cluster's own users (``elastic``, the internal users) and the association
users: ECK uses one length and alphabet for both.
"""

from __future__ import annotations

import secrets
import string

__all__ = ["PASSWORD_LENGTH", "random_password"]

#: ECK's generated password length.
PASSWORD_LENGTH = 24
_PASSWORD_ALPHABET = string.ascii_letters + string.digits


def random_password() -> str:
    """A fresh password of ``PASSWORD_LENGTH`` letters and digits, from the system's CSPRNG."""
    return "".join(secrets.choice(_PASSWORD_ALPHABET) for _ in range(PASSWORD_LENGTH))
