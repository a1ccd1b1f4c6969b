"""ECK's StackConfigPolicy rules as pure functions, one idea a module.

* :mod:`.policy` — a policy object read as the rules use it, and an unusable resourceSelector;
* :mod:`.variables` — ``spec.variablesFrom`` and the ``${VAR}`` substitution;
* :mod:`.targeting` — which policies target an Elasticsearch or a Kibana, in merge order;
* :mod:`.merge` — the policies of one resource merged by weight, and their conflicts;
* :mod:`.file_settings` — the file-based settings document and its versioning rule;
* :mod:`.owners` — the soft-owner marks of the Secrets a policy writes;
* :mod:`.secrets` — those Secrets: names, keys, annotations and content;
* :mod:`.reading` — what the Elasticsearch and Kibana builders read back from them;
* :mod:`.status` — each targeted resource's phase and the policy's status;
* :mod:`.values` — lenient readers of the untyped JSON of policies and Secrets.

Nothing here does I/O: the policy controller's activities read the policies, the targeted
Elasticsearch clusters and Kibana instances and the current Secrets, call these functions and
write what they return.
"""
