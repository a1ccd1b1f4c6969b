"""ECK's validating webhooks.

* :mod:`stackflow.webhooks.admission` — ECK's webhook table and ``review`` (pure).
"""
