"""The controller table: every controller of the operator as pure data (see ``table``).

One module per controller family; ``CONTROLLERS`` is the table ``stackflow run`` passes to the
operator. Adding a controller is a row in a family module here plus its activities module.
"""

from __future__ import annotations

from stackflow.controllers.apps import APP_CONTROLLERS
from stackflow.controllers.associations import ASSOCIATION_CONTROLLERS
from stackflow.controllers.autoops import AUTOOPS_POLICY_CONTROLLER
from stackflow.controllers.autoscaler import AUTOSCALER_CONTROLLER
from stackflow.controllers.elasticsearch import ELASTICSEARCH_CONTROLLER, LICENSE_CONTROLLER
from stackflow.controllers.remoteclusters import REMOTE_CLUSTER_CONTROLLER
from stackflow.controllers.stackconfigpolicy import STACK_CONFIG_POLICY_CONTROLLER
from stackflow.controllers.table import (
    ChildWatch,
    Controller,
    ControllerTable,
    FlipStrategy,
    Gate,
    OwnersOf,
    SelectionContext,
    SelectionWatch,
    Selects,
    UnlicensedNotice,
)
from stackflow.controllers.trial import TRIAL_CONTROLLER

__all__ = [
    "CONTROLLERS",
    "ChildWatch",
    "Controller",
    "ControllerTable",
    "FlipStrategy",
    "Gate",
    "OwnersOf",
    "SelectionContext",
    "SelectionWatch",
    "Selects",
    "UnlicensedNotice",
]

CONTROLLERS = ControllerTable(
    (
        ELASTICSEARCH_CONTROLLER,
        LICENSE_CONTROLLER,
        TRIAL_CONTROLLER,
        *APP_CONTROLLERS,
        *ASSOCIATION_CONTROLLERS,
        STACK_CONFIG_POLICY_CONTROLLER,
        AUTOOPS_POLICY_CONTROLLER,
        AUTOSCALER_CONTROLLER,
        REMOTE_CLUSTER_CONTROLLER,
    )
)
