"""Temporal activities: every side effect of the engine.

One module per controller family (``elasticsearch``, ``elasticsearch_license``, ``license``,
``trial``, ``apps``, ``associations`` with ``association_targets``), each exporting the
``IMPLEMENTATIONS`` the controller table's names are bound to (``binding``); ``registry`` builds the
registered activities; ``generic`` holds the controller-independent ones (scope check, license
gate, notices, flips); ``context`` (ControllerContext), ``errors`` (the one error →
ApplicationError table), ``licenses`` (reading operator licenses), ``apply`` (idempotent
create-or-update) and ``kinds`` (the kinds written, by manifest). Nothing is imported here.
"""
