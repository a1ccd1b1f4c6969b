"""Temporal activities: every side effect of the engine.

Modules: ``context`` (ControllerContext), ``errors`` (the one error → ApplicationError table),
``registry`` (``build_activities``), ``generic`` (scope check, license gate, notices, flips),
``elasticsearch``, ``license`` and ``trial`` (the controllers' activities), ``licenses`` (reading
operator licenses), ``apply`` (idempotent create-or-update) and ``kinds`` (resources addressed).
Nothing is imported here: ``stackflow.controllers`` imports the controller modules, and the
registry imports ``stackflow.controllers``.
"""
