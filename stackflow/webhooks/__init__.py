"""ECK's validating webhooks.

* :mod:`stackflow.webhooks.admission` — ECK's webhook table and ``review`` (pure);
* :mod:`stackflow.webhooks.certs` — the certificate Secret and the ValidatingWebhookConfiguration;
* :mod:`stackflow.webhooks.server` — the HTTPS server every replica runs;
* :mod:`stackflow.webhooks.runner` — what ``stackflow run`` starts.
"""
