"""Temporal activities: every side effect of the engine.

One module (or package) per controller family (``elasticsearch``, ``cluster_license_secret``,
``trial``, ``apps``, ``associations`` with ``association_targets``, ``stackconfigpolicy``,
``autoscaler``, ``autoops``, ``remoteclusters``), each a class holding its dependencies, exported
as the ``FAMILIES`` the controller table's names are bound to (``binding``); ``registry`` builds
the registered activities; ``generic`` holds the controller-independent ones (scope check, license
gate, notices, flips); ``endpoints`` how the operator reaches a cluster; ``context``
(ControllerContext), ``errors`` (the one error → ApplicationError table), ``apply`` (idempotent
create-or-update) and ``kinds`` (the kinds written, by manifest). Nothing is imported here.
"""
