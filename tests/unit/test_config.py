"""Operator configuration: defaults, file and environment sources, one-line errors."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from stackflow.config import (
    ConfigError,
    OperatorConfig,
    describe_effective,
    empty_selector_log_line,
    env_var_name,
    format_duration,
    load_config,
    parse_duration,
)
from stackflow.scope import ScopeMode

PEM = "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----\n"


def _write(tmp_path: Path, text: str, name: str = "eck.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_defaults_follow_eck() -> None:
    config = load_config(None, {})
    assert config == OperatorConfig()
    assert config.operator_namespace == "elastic-system"
    assert config.namespaces == ()
    assert config.namespace_selector is None
    assert (config.enable_webhook, config.webhook_port, config.manage_webhook_certs) == (
        False,
        9443,
        True,
    )
    assert (config.metrics_port, config.enable_leader_election, config.disable_telemetry) == (
        0,
        True,
        False,
    )
    assert (config.telemetry_interval, config.log_verbosity) == (timedelta(hours=1), 0)
    assert (config.temporal_address, config.temporal_namespace, config.temporal_task_queue) == (
        "localhost:7233",
        "default",
        "stackflow",
    )
    assert config.scope().mode is ScopeMode.ALL_NAMESPACES


def test_file_then_environment(tmp_path: Path) -> None:
    key = _write(tmp_path, PEM, "license.pem")
    path = _write(
        tmp_path,
        f"""
operator-namespace: ops
namespace-selector:
  matchExpressions: [{{key: env, operator: In, values: [prod]}}]
webhook-port: 8443
telemetry-interval: 30m
license-public-key: {key}
""",
    )
    config = load_config(
        path, {"STACKFLOW_WEBHOOK_PORT": "9000", "STACKFLOW_ENABLE_WEBHOOK": "true", "OTHER": "x"}
    )
    assert config.operator_namespace == "ops"
    assert config.webhook_port == 9000
    assert config.enable_webhook is True
    assert config.telemetry_interval == timedelta(minutes=30)
    assert config.license_public_key == key
    assert config.dynamic_namespaces_enabled
    selector = config.scope().namespace_selector
    assert selector is not None
    assert selector.to_string() == "env in (prod)"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("a=b,c in (x)", "a=b,c in (x)"),
        ("{matchLabels: {a: b}}", "a=b"),
        ('{"matchExpressions": [{"key": "a", "operator": "Exists"}]}', "a"),
        ("!legacy", "!legacy"),
    ],
)
def test_selector_from_environment(value: str, expected: str) -> None:
    config = load_config(None, {"STACKFLOW_NAMESPACE_SELECTOR": value})
    assert config.namespace_selector is not None
    assert config.namespace_selector.to_string() == expected


def test_namespaces_from_environment_are_comma_separated() -> None:
    config = load_config(None, {"STACKFLOW_NAMESPACES": "a, b,,c"})
    assert config.namespaces == ("a", "b", "c")
    assert config.scope().mode is ScopeMode.STATIC_LIST


@pytest.mark.parametrize(
    ("text", "managed"),
    [
        ("namespace-selector: {}", "all namespaces"),
        ("namespace-selector: {}\nnamespaces: [a]", "the configured namespaces"),
    ],
)
def test_empty_selector_turns_dynamic_mode_off(tmp_path: Path, text: str, managed: str) -> None:
    config = load_config(_write(tmp_path, text), {})
    assert not config.dynamic_namespaces_enabled
    assert config.scope().namespace_selector is None
    assert empty_selector_log_line(config) == (
        f"namespace-selector is empty: dynamic namespace selection is disabled, managing {managed}"
    )


def test_no_log_line_without_an_empty_selector() -> None:
    assert empty_selector_log_line(load_config(None, {})) is None
    assert empty_selector_log_line(load_config(None, {"STACKFLOW_NAMESPACE_SELECTOR": "a"})) is None


SELECTOR_OP_ERROR = (
    'namespace-selector.matchExpressions[0].operator: unsupported operator "Foo" '
    "(must be one of In, NotIn, Exists, DoesNotExist)"
)


@pytest.mark.parametrize(
    ("text", "environ", "message"),
    [
        (
            "namespaces: [a]\nnamespace-selector: {matchLabels: {a: b}}",
            {},
            '"namespaces" and "namespace-selector" are mutually exclusive',
        ),
        (
            "namespaces: [a]",
            {"STACKFLOW_NAMESPACE_SELECTOR": "x=y"},
            '"namespaces" and "namespace-selector" are mutually exclusive',
        ),
        (
            "namespace-selector:\n  matchExpressions: [{key: a, operator: Foo}]",
            {},
            SELECTOR_OP_ERROR,
        ),
        (
            "namespace-selector:\n  matchExpressions: [{key: a, operator: In}]",
            {},
            "namespace-selector.matchExpressions[0].values: must have at least one value when operator is In",
        ),
        (
            "namespace-selector: {matchLabels: {a: [b]}}",
            {},
            'namespace-selector.matchLabels["a"]: must be a string, got ["b"]',
        ),
        (
            "namespace-selector: {matchLabel: {a: b}}",
            {},
            "namespace-selector.matchLabel: unknown field",
        ),
        (
            "",
            {"STACKFLOW_NAMESPACE_SELECTOR": "{matchExpressions: [{key: a, operator: Foo}]}"},
            SELECTOR_OP_ERROR + " (from STACKFLOW_NAMESPACE_SELECTOR)",
        ),
        (
            "",
            {"STACKFLOW_NAMESPACE_SELECTOR": "a in (x"},
            'namespace-selector: invalid selector "a in (x": position 7: found end of string, '
            "expected a label value, ',' or ')' (from STACKFLOW_NAMESPACE_SELECTOR)",
        ),
        (
            "webhook-prot: 1",
            {},
            'webhook-prot: unknown configuration key (did you mean "webhook-port"?)',
        ),
        ("zzz: 1", {}, "zzz: unknown configuration key"),
        (
            "webhook-cert-dir: x",
            {},
            "webhook-cert-dir: an ECK setting that Stackflow does not support",
        ),
        (
            "webhook-secret: Not_A_Name",
            {},
            'webhook-secret: must be a Kubernetes object name, got "Not_A_Name"',
        ),
        ("1: x", {}, "1: configuration keys must be strings"),
        ("webhook-port: abc", {}, 'webhook-port: must be an integer, got "abc"'),
        (
            "",
            {"STACKFLOW_WEBHOOK_PORT": "abc"},
            'webhook-port: must be an integer, got "abc" (from STACKFLOW_WEBHOOK_PORT)',
        ),
        ("webhook-port: 0", {}, "webhook-port: must be a port between 1 and 65535, got 0"),
        (
            "metrics-port: 70000",
            {},
            "metrics-port: must be a port between 1 and 65535 (0 disables metrics), got 70000",
        ),
        (
            "enable-webhook: maybe",
            {},
            'enable-webhook: must be a boolean (true or false), got "maybe"',
        ),
        ("log-verbosity: -3", {}, "log-verbosity: must be -2 (errors only) or more, got -3"),
        (
            "telemetry-interval: 1x",
            {},
            'telemetry-interval: must be a duration such as 1h, 30m or 90s, got "1x"',
        ),
        (
            "telemetry-interval: 3600",
            {},
            "telemetry-interval: must be a duration such as 1h, 30m or 90s, got 3600",
        ),
        ("telemetry-interval: 0s", {}, 'telemetry-interval: must be a positive duration, got "0s"'),
        (
            "operator-namespace: Elastic",
            {},
            "operator-namespace: must be a namespace name (lowercase alphanumerics "
            "and '-', at most 63 characters, starting and ending with an alphanumeric), got \"Elastic\"",
        ),
        (
            "namespaces: [ok, Bad_ns]",
            {},
            "namespaces: entry 1: must be a namespace name (lowercase alphanumerics "
            "and '-', at most 63 characters, starting and ending with an alphanumeric), got \"Bad_ns\"",
        ),
        ("namespaces: {a: b}", {}, 'namespaces: must be a list, got {"a": "b"}'),
        (
            "temporal-address: localhost",
            {},
            'temporal-address: must be host:port (e.g. localhost:7233), got "localhost"',
        ),
        ("temporal-task-queue: ' '", {}, "temporal-task-queue: must not be empty"),
        (
            "max-concurrent-reconciles: 0",
            {},
            "max-concurrent-reconciles: must be 1 or more, got 0",
        ),
        (
            "temporal-max-cached-workflows: -1",
            {},
            "temporal-max-cached-workflows: must be 0 (no cache) or more, got -1",
        ),
        (
            "license-public-key: /does/not/exist.pem",
            {},
            'license-public-key: file "/does/not/exist.pem" does not exist',
        ),
        (
            "",
            {"STACKFLOW_TEMPORAL_TLS_CA": "/nope"},
            'temporal-tls-ca: file "/nope" does not exist (from STACKFLOW_TEMPORAL_TLS_CA)',
        ),
    ],
)
def test_bad_configuration_is_one_line(
    tmp_path: Path, text: str, environ: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(_write(tmp_path, text), environ)
    assert str(caught.value) == message


def test_license_key_that_is_not_pem(tmp_path: Path) -> None:
    key = _write(tmp_path, "not a key", "key.pem")
    with pytest.raises(ConfigError) as caught:
        load_config(None, {"STACKFLOW_LICENSE_PUBLIC_KEY": str(key)})
    assert str(caught.value) == (
        f'license-public-key: "{key}" is not a PEM file (no -----BEGIN line) (from STACKFLOW_LICENSE_PUBLIC_KEY)'
    )


def test_tls_cert_without_key(tmp_path: Path) -> None:
    cert = _write(tmp_path, PEM, "tls.crt")
    with pytest.raises(ConfigError) as caught:
        load_config(None, {"STACKFLOW_TEMPORAL_TLS_CERT": str(cert)})
    assert (
        str(caught.value)
        == '"temporal-tls-cert" and "temporal-tls-key" must be set together (mutual TLS)'
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("- a\n- b\n", "must be a mapping of configuration keys, got a list"),
        ("just text\n", "must be a mapping of configuration keys, got a str"),
        (
            "a: [1,\n",
            "invalid YAML at line 2, column 1: expected the node content, but found '<stream end>'",
        ),
        ("a: b\n c: d\n", "invalid YAML at line 2, column 3: mapping values are not allowed here"),
    ],
)
def test_bad_files(tmp_path: Path, text: str, problem: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path, {})
    assert str(caught.value) == f'config file "{path}": {problem}'
    assert "\n" not in str(caught.value)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r'config file ".*missing.yaml": no such file$'):
        load_config(tmp_path / "missing.yaml", {})
    with pytest.raises(ConfigError, match=r": is a directory, not a file$"):
        load_config(tmp_path, {})


def test_empty_file_is_all_defaults(tmp_path: Path) -> None:
    assert load_config(_write(tmp_path, "# nothing\n"), {}) == OperatorConfig()


def test_describe_effective_redacts_secrets_and_reloads(tmp_path: Path) -> None:
    config = load_config(
        None,
        {
            "STACKFLOW_TEMPORAL_API_KEY": "s3cret-key",
            "STACKFLOW_NAMESPACE_SELECTOR": "team=a,env in (prod)",
            "STACKFLOW_TELEMETRY_INTERVAL": "90m",
        },
    )
    text = describe_effective(config)
    assert "s3cret-key" not in text
    assert text.splitlines()[0] == '# scope: dynamic (selector "env in (prod),team=a")'
    effective = yaml.safe_load(text)
    assert effective["temporal-api-key"] == "<redacted>"
    assert effective["telemetry-interval"] == "1h30m"
    del effective["temporal-api-key"]
    # The effective configuration is itself a valid configuration file with the same meaning.
    assert load_config(_write(tmp_path, yaml.safe_dump(effective)), {}) == config.model_copy(
        update={"temporal_api_key": None}
    )


@pytest.mark.parametrize(
    ("text", "expected", "rendered"),
    [
        ("1h", timedelta(hours=1), "1h"),
        ("90m", timedelta(minutes=90), "1h30m"),
        ("1.5h", timedelta(minutes=90), "1h30m"),
        ("45s", timedelta(seconds=45), "45s"),
        ("500ms", timedelta(milliseconds=500), "500ms"),
        ("1m30.5s", timedelta(seconds=90.5), "1m30.5s"),
        ("0", timedelta(0), "0s"),
    ],
)
def test_durations(text: str, expected: timedelta, rendered: str) -> None:
    assert parse_duration(text) == expected
    assert format_duration(expected) == rendered
    assert parse_duration(rendered) == expected


@pytest.mark.parametrize("text", ["", "h", "1", "1d", "1h 2m", "-1h", "1h-"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError, match="must be a duration"):
        parse_duration(text)


def test_env_var_names() -> None:
    assert env_var_name("namespace-selector") == "STACKFLOW_NAMESPACE_SELECTOR"
    assert env_var_name("temporal-tls-ca") == "STACKFLOW_TEMPORAL_TLS_CA"


@pytest.mark.parametrize(
    ("text", "environ", "expected"),
    [
        ("", {}, False),
        ("enforce-rbac-on-refs: true", {}, True),
        ("enforce-rbac-on-refs: false", {"STACKFLOW_ENFORCE_RBAC_ON_REFS": "true"}, True),
        ("enforce-rbac-on-refs: true", {"STACKFLOW_ENFORCE_RBAC_ON_REFS": "false"}, False),
    ],
)
def test_enforce_rbac_on_refs_from_the_file_or_the_environment(
    tmp_path: Path, text: str, environ: dict[str, str], expected: bool
) -> None:
    config = load_config(_write(tmp_path, text), environ)
    assert config.enforce_rbac_on_refs is expected


def test_enforce_rbac_on_refs_must_be_a_boolean(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^enforce-rbac-on-refs: "):
        load_config(_write(tmp_path, "enforce-rbac-on-refs: sometimes"), {})


@pytest.mark.parametrize(
    ("text", "environ", "expected"),
    [
        ("", {}, 16),
        # ECK's own chart writes it quoted into the operator's ConfigMap.
        ('max-concurrent-reconciles: "3"', {}, 3),
        ("max-concurrent-reconciles: 3", {"STACKFLOW_MAX_CONCURRENT_RECONCILES": "40"}, 40),
    ],
)
def test_max_concurrent_reconciles_is_eck_s_key(
    tmp_path: Path, text: str, environ: dict[str, str], expected: int
) -> None:
    config = load_config(_write(tmp_path, text), environ)
    assert config.max_concurrent_reconciles == expected


#: 422 bytes that expand to a billion "lol"s for a loader that follows aliases.
ALIAS_BOMB = """a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            ALIAS_BOMB,
            "a: YAML anchors and aliases (&name, *name) are not allowed at line 1, column 4",
        ),
        (
            "namespaces: [a]\nnamespace-selector: *x\n",
            "namespace-selector: YAML anchors and aliases (&name, *name) are not allowed "
            "at line 2, column 21",
        ),
        (
            "namespace-selector: " + "[" * 2000 + "]" * 2000,
            "namespace-selector: nested more than 32 levels deep at line 1, column 53",
        ),
        (
            "namespaces:\n" + "".join("  " * depth + "-\n" for depth in range(40)),
            "namespaces: nested more than 32 levels deep at line 34, column 65",
        ),
        (
            "? " + "[" * 2000 + "]" * 2000 + "\n: x\n",
            "[0]: nested more than 32 levels deep at line 1, column 35",
        ),
        (
            "webhook-port: 9443\nenable-webhook: true\nwebhook-port: 8443\n",
            "webhook-port: duplicate key at line 3, column 1 (first given at line 1)",
        ),
        (
            "namespace-selector:\n  matchLabels:\n    team: a\n    team: b\n",
            "namespace-selector.matchLabels.team: duplicate key at line 4, column 5 "
            "(first given at line 3)",
        ),
    ],
)
def test_yaml_the_loader_refuses(tmp_path: Path, text: str, problem: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path, {})
    assert str(caught.value) == f'config file "{path}": {problem}'


def test_a_file_over_one_mebibyte_is_refused_unread(tmp_path: Path) -> None:
    path = _write(tmp_path, "# " + "x" * (1024 * 1024) + "\nwebhook-port: 9443\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path, {})
    assert str(caught.value) == (
        f'config file "{path}": larger than 1 MiB, the most a configuration file may be'
    )


def test_an_alias_in_an_environment_selector_is_refused() -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(None, {"STACKFLOW_NAMESPACE_SELECTOR": "{matchLabels: {a: &x b, c: *x}}"})
    assert str(caught.value) == (
        "namespace-selector: matchLabels.a: YAML anchors and aliases (&name, *name) are not "
        "allowed at line 1, column 19 (from STACKFLOW_NAMESPACE_SELECTOR)"
    )


@pytest.mark.parametrize(
    ("text", "environ", "message"),
    [
        ("webhook-port: true", {}, "webhook-port: must be an integer, got true"),
        ("webhook-port: 9443.0", {}, "webhook-port: must be an integer, got 9443.0"),
        ("metrics-port: false", {}, "metrics-port: must be an integer, got false"),
        ("log-verbosity: true", {}, "log-verbosity: must be an integer, got true"),
        (
            "temporal-max-cached-workflows: true",
            {},
            "temporal-max-cached-workflows: must be an integer, got true",
        ),
        (
            "",
            {"STACKFLOW_WEBHOOK_PORT": "true"},
            'webhook-port: must be an integer, got "true" (from STACKFLOW_WEBHOOK_PORT)',
        ),
        ("enable-webhook: 1", {}, "enable-webhook: must be a boolean (true or false), got 1"),
        (
            "in-cluster-networking: 0",
            {},
            "in-cluster-networking: must be a boolean (true or false), got 0",
        ),
    ],
)
def test_integers_and_booleans_are_not_each_other(
    tmp_path: Path, text: str, environ: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(_write(tmp_path, text), environ)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("text", "environ", "expected"),
    [
        ("webhook-port: 8443", {}, {"webhook_port": 8443}),
        ("", {"STACKFLOW_WEBHOOK_PORT": "8443"}, {"webhook_port": 8443}),
        ("enable-webhook: true", {}, {"enable_webhook": True}),
        ("", {"STACKFLOW_ENABLE_WEBHOOK": "false"}, {"enable_webhook": False}),
        ("log-verbosity: -1", {}, {"log_verbosity": -1}),
    ],
)
def test_integers_and_booleans_of_their_own_type_pass(
    tmp_path: Path, text: str, environ: dict[str, str], expected: dict[str, object]
) -> None:
    config = load_config(_write(tmp_path, text), environ)
    assert {name: getattr(config, name) for name in expected} == expected


def test_a_long_refused_value_is_not_repeated_in_full(tmp_path: Path) -> None:
    path = _write(tmp_path, "namespaces: {" + ", ".join(f"k{i}: v" for i in range(20000)) + "}")
    with pytest.raises(ConfigError) as caught:
        load_config(path, {})
    message = str(caught.value)
    assert message.startswith('namespaces: must be a list, got {"k0": "v"')
    assert len(message) < 1100
    assert message.endswith(" more characters)")
