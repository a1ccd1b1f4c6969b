"""Fresh RSA keys, made ahead of need by a background thread.

A new Elasticsearch needs four or more 2048-bit RSA keys in its first reconcile (its CAs and
leaf certificates), a Kibana two, a trial one; each takes 10-150 ms of CPU (about 30 ms median on
the CI machine): 130-320 ms of a new cluster's first build, against 50 ms with the keys ready.
The operator keeps a few keys ready in :data:`RSA_KEYS`: a reconcile takes one at once, and the
filler thread makes the next. OpenSSL generates the key without holding the GIL, so the filler
does not slow the event loop. It starts once the operator is ready, at normal priority: started
with the process at the lowest priority it lengthened the start by about a tenth (between two
keys the thread takes the GIL, and a starved thread is slow to give it back).

Each key is handed out once and lives in memory only. With the pool empty, or never started
(tests, one-shot commands), a key is generated on the spot, as before.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

from cryptography.hazmat.primitives.asymmetric import rsa

from stackflow.licensing.issue import generate_private_key

__all__ = ["POOL_SIZE", "RSA_KEYS", "RsaKeyPool"]

#: Keys kept ready: a new Elasticsearch with one node set takes four or five, a Kibana two.
POOL_SIZE = 8
#: How long ``stop`` waits for a key being made (the slowest take about 150 ms).
_STOP_SECONDS = 5.0


class RsaKeyPool:
    """Up to ``size`` keys made ahead by a background thread between ``start`` and ``stop``."""

    def __init__(
        self,
        size: int = POOL_SIZE,
        generate: Callable[[], rsa.RSAPrivateKey] = generate_private_key,
    ) -> None:
        """A pool of ``size`` keys made by ``generate`` (2048-bit keys, as ECK's certificates and
        trials use, by default); nothing runs until ``start``."""
        if size < 1:
            raise ValueError(f"a key pool holds at least one key, got {size}")
        self.size = size
        self._generate = generate
        self._keys: deque[rsa.RSAPrivateKey] = deque()
        self._changed = threading.Condition()
        self._stopping = False
        self._filler: threading.Thread | None = None

    @property
    def ready(self) -> int:
        """How many keys are ready now."""
        with self._changed:
            return len(self._keys)

    def take(self) -> rsa.RSAPrivateKey:
        """A ready key (the filler then makes another), else one made now; never one twice."""
        with self._changed:
            if self._keys:
                key = self._keys.popleft()
                self._changed.notify_all()
                return key
        return self._generate()

    def start(self) -> None:
        """Start filling the pool in a daemon thread (again after a ``stop``; once if running)."""
        with self._changed:
            if self._filler is not None and self._filler.is_alive():
                return
            self._stopping = False
            self._filler = threading.Thread(target=self._fill, name="rsa-key-pool", daemon=True)
            self._filler.start()

    def stop(self) -> None:
        """Stop the filler (after the key it is making) and drop the keys it made."""
        with self._changed:
            self._stopping = True
            self._keys.clear()
            self._changed.notify_all()
            filler, self._filler = self._filler, None
        if filler is not None:
            filler.join(_STOP_SECONDS)

    def wait_filled(self, timeout: float) -> bool:
        """Whether the pool holds ``size`` keys within ``timeout`` seconds."""
        with self._changed:
            return self._changed.wait_for(lambda: len(self._keys) >= self.size, timeout)

    def _fill(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._stopping or len(self._keys) < self.size)
                if self._stopping:
                    return
            key = self._generate()
            with self._changed:
                if self._stopping:
                    return
                self._keys.append(key)
                self._changed.notify_all()


#: The operator's pool: started once the operator is ready (``stackflow.cli.operator``), stopped
#: at its shutdown; the certificates and the trial take their keys from it.
RSA_KEYS = RsaKeyPool()
