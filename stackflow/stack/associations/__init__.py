"""ECK's associations (cross-resource references) as pure logic.

* :mod:`.table` — the thirteen association pairs and everything that differs between them;
* :mod:`.refs` — an associated object's refs, namespace defaulted, and their validation errors;
* :mod:`.conf` — the conf annotation (name, JSON, stale clean-up, external targets);
* :mod:`.secrets` — the CA copy and the user Secrets on both sides, unbind selectors;
* :mod:`.service_accounts` — service-account mode tokens and their two Secrets;
* :mod:`.status` — per-ref statuses and each kind's status fields;
* :mod:`.flip` — the namespace flip mapper, transitive refs included;
* :mod:`.bcrypt` — the password hash of association users;
* :mod:`.versions` — lenient stack-version comparison.
"""
