"""WATCH: start points, bookmarks, legacy paths, field selectors, single objects."""

from __future__ import annotations

import itertools

from tests.conformance.harness import Run
from tests.conformance.kube import MERGE_PATCH, config_map, core, event_summary, rv
from tests.conformance.registry import check


@check(
    "watch-from-resource-version", "A watch from an object's RV delivers exactly what came after"
)
async def _from_resource_version(run: Run) -> None:
    first = await run.ok("POST", core(run, "configmaps"), body=config_map("a", labels={"cf": "w"}))
    await run.ok("POST", core(run, "configmaps"), body=config_map("b", labels={"cf": "w"}))
    await run.ok(
        "PATCH", core(run, "configmaps", "a"), body={"data": {"k": "2"}}, content_type=MERGE_PATCH
    )
    await run.ok("DELETE", core(run, "configmaps", "b"))
    stream = await run.watch(
        core(run, "configmaps"), {"resourceVersion": rv(first), "labelSelector": "cf"}
    )
    await run.ok("POST", core(run, "configmaps"), body=config_map("end", labels={"cf": "w"}))
    events = await stream.events_until(
        lambda event: event.get("object", {}).get("metadata", {}).get("name") == "end"
    )
    run.fact("events after the first create", [event_summary(event) for event in events])
    run.fact(
        "resourceVersions strictly increase",
        all(
            int(a["object"]["metadata"]["resourceVersion"])
            < int(b["object"]["metadata"]["resourceVersion"])
            for a, b in itertools.pairwise(events)
        ),
    )
    run.fact(
        "every event is newer than the start",
        all(
            int(event["object"]["metadata"]["resourceVersion"]) > int(rv(first)) for event in events
        ),
    )


@check(
    "watch-initial-state",
    "A watch without resourceVersion (or 0) starts with ADDED for what exists",
)
async def _initial_state(run: Run) -> None:
    for name in ("a", "b"):
        await run.ok("POST", core(run, "configmaps"), body=config_map(name, labels={"cf": "w"}))
    for start in ({}, {"resourceVersion": "0"}):
        stream = await run.watch(core(run, "configmaps"), {**start, "labelSelector": "cf"})
        events = [await stream.next_event(within=30), await stream.next_event(within=30)]
        run.fact(
            f"initial events {start}",
            sorted(
                (e or {}).get("type", "")
                + " "
                + (e or {}).get("object", {}).get("metadata", {}).get("name", "")
                for e in events
            ),
        )
        stream.close()


@check("watch-bookmarks", "allowWatchBookmarks: bookmark shape; none without it; timeoutSeconds")
async def _bookmarks(run: Run) -> None:
    created = await run.ok(
        "POST", core(run, "configmaps"), body=config_map("a", labels={"cf": "w"})
    )
    stream = await run.watch(
        core(run, "configmaps"),
        {
            "resourceVersion": rv(created),
            "allowWatchBookmarks": "true",
            "timeoutSeconds": "5",
            "labelSelector": "cf",
        },
    )
    events = await stream.until_end(within=60)
    # How many bookmarks the real server sends depends on the progress of its watch cache (the
    # other clients' writes): only what holds for every bookmark is compared.
    run.fact("only bookmarks came", all(event.get("type") == "BOOKMARK" for event in events))
    run.fact(
        "bookmark objects carry only kind, apiVersion and metadata.resourceVersion",
        all(
            sorted(event["object"]) == ["apiVersion", "kind", "metadata"]
            and sorted(event["object"]["metadata"]) == ["resourceVersion"]
            and int(event["object"]["metadata"]["resourceVersion"]) >= int(rv(created))
            for event in events
        ),
    )
    run.fact("the stream ended by itself", stream.ended)
    no_bookmarks = await run.watch(
        core(run, "configmaps"),
        {"resourceVersion": rv(created), "timeoutSeconds": "3", "labelSelector": "cf"},
    )
    run.fact(
        "without allowWatchBookmarks",
        [event_summary(e) for e in await no_bookmarks.until_end(within=60)],
    )


@check(
    "watch-legacy-and-named", "The /watch/ path form, a single object watch, field selector watch"
)
async def _legacy_and_named(run: Run) -> None:
    created = await run.ok("POST", core(run, "configmaps"), body=config_map("a"))
    await run.ok("POST", core(run, "configmaps"), body=config_map("b"))
    legacy = await run.watch(
        f"/api/v1/watch/namespaces/{run.ns}/configmaps/a", {"resourceVersion": rv(created)}
    )
    by_field = await run.watch(
        core(run, "configmaps"),
        {"fieldSelector": "metadata.name=a", "resourceVersion": rv(created)},
    )
    for name in ("b", "a"):
        await run.ok(
            "PATCH",
            core(run, "configmaps", name),
            body={"data": {"k": "2"}},
            content_type=MERGE_PATCH,
        )
    run.fact("legacy named watch", event_summary(await legacy.next_event(within=30) or {}))
    run.fact("field selector watch", event_summary(await by_field.next_event(within=30) or {}))
    mismatch = await run.request(
        "GET",
        f"/api/v1/watch/namespaces/{run.ns}/configmaps/a",
        query={"fieldSelector": "metadata.name=b"},
    )
    run.record("named watch with another name selector", mismatch)


@check(
    "watch-errors",
    "Watch request validation: bad RV, sendInitialEvents without match, too large RV",
)
async def _watch_errors(run: Run) -> None:
    await run.call(
        "watch with a bad resourceVersion",
        "GET",
        core(run, "configmaps"),
        query={"watch": "true", "resourceVersion": "abc"},
    )
    await run.call(
        "sendInitialEvents without resourceVersionMatch",
        "GET",
        core(run, "configmaps"),
        query={"watch": "true", "sendInitialEvents": "true"},
    )
    await run.call(
        "resourceVersionMatch on a watch without sendInitialEvents",
        "GET",
        core(run, "configmaps"),
        query={"watch": "true", "resourceVersionMatch": "NotOlderThan", "resourceVersion": "1"},
    )
    stream = await run.watch(
        core(run, "configmaps"), {"resourceVersion": "999999999", "timeoutSeconds": "5"}
    )
    run.fact("watch from a future resourceVersion: status", stream.status)
    events = await stream.until_end(within=60)
    run.fact(
        "watch from a future resourceVersion: events", [event_summary(event) for event in events]
    )
