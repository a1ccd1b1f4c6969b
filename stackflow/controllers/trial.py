"""The trial controller: a labelled trial Secret starts ECK's 30-day enterprise trial."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stackflow.controllers.table import ChildWatch, Controller, FlipStrategy, Gate
from stackflow.licensing.model import (
    TRIAL_SECRET_NAME_ANNOTATION,
    TRIAL_SECRET_NAMESPACE_ANNOTATION,
    TRIAL_SELECTOR,
    TRIAL_STATUS_SECRET_NAME,
)
from stackflow.models.keys import NamespacedName
from stackflow.models.kinds import SECRETS
from stackflow.models.objects import view

__all__ = ["TRIAL_CONTROLLER", "trial_status_owners"]


def trial_status_owners(secret: Mapping[str, Any]) -> tuple[NamespacedName, ...]:
    """The trial Secret a ``trial-status`` Secret points at, for the child watch (pure)."""
    meta = view(secret)
    if meta.name != TRIAL_STATUS_SECRET_NAME:
        return ()
    name = meta.annotations.get(TRIAL_SECRET_NAME_ANNOTATION)
    namespace = meta.annotations.get(TRIAL_SECRET_NAMESPACE_ANNOTATION)
    return (NamespacedName(str(namespace), str(name)),) if name and namespace else ()


TRIAL_CONTROLLER = Controller(
    name="trial",
    primary=SECRETS,
    gate=Gate.NONE,
    children=(ChildWatch(kind=SECRETS, owners=trial_status_owners),),
    flip=FlipStrategy.CONTROLLER,
    primary_label_selector=TRIAL_SELECTOR,
)
