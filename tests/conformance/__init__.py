"""kubesim measured against the real API server, answer by answer (see ``README`` of the suite in
``DIFFERENCES.md``): a table of checks run against both, transcripts compared field by field."""
