"""A test-only worker interceptor that makes the workflow see continue-as-new suggested early.

The server suggests continue-as-new only after thousands of events; this interceptor answers
``workflow.info().is_continue_as_new_suggested()`` with True once the history is ``events`` long,
so a test (or the replay of a history recorded with it) exercises the continue-as-new path with
production code unchanged.
"""

from __future__ import annotations

import dataclasses

from temporalio import workflow
from temporalio.worker import (
    Interceptor,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)

__all__ = ["ContinueAsNewAfter"]


@dataclasses.dataclass(frozen=True)
class _SuggestingInfo(workflow.Info):
    suggest_after_events: int = 0

    def is_continue_as_new_suggested(self) -> bool:
        return (
            super().is_continue_as_new_suggested()
            or self.get_current_history_length() >= self.suggest_after_events
        )


class _Outbound(WorkflowOutboundInterceptor):
    def __init__(self, next: WorkflowOutboundInterceptor, events: int) -> None:
        super().__init__(next)
        self._events = events

    def info(self) -> workflow.Info:
        info = super().info()
        fields = {field.name: getattr(info, field.name) for field in dataclasses.fields(info)}
        return _SuggestingInfo(**fields, suggest_after_events=self._events)


class ContinueAsNewAfter(Interceptor):
    """Suggest continue-as-new once a run's history has ``events`` events."""

    def __init__(self, events: int) -> None:
        """Suggest at ``events`` events."""
        self.events = events

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        """The inbound interceptor that installs the suggesting outbound one."""
        events = self.events

        class _Inbound(WorkflowInboundInterceptor):
            def init(self, outbound: WorkflowOutboundInterceptor) -> None:
                super().init(_Outbound(outbound, events))

        return _Inbound
