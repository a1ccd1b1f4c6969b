"""The pure decisions of changing a running Elasticsearch cluster safely, as ECK makes them.

Snapshots in (:mod:`.snapshot`), decisions and steps out (:mod:`.steps`); no I/O.
"""
