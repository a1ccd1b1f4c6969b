"""Pure desired-state builders: a resource's spec in, child manifests and status out (no I/O).

Sub-modules: ``naming`` (ECK's Namer and HashObject), ``labels``, ``certificates`` (self-signed CAs and
leaf certificates, reused while valid), ``objects`` (manifest helpers) and one package per kind
(``elasticsearch``).
"""
