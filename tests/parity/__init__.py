"""The parity tier: ECK's own operator and Stackflow, each on a fresh real control plane with the
same manifests, and what they make diffed object by object and field by field (docs/parity.md)."""
