"""Transient server errors: what, in one check's exchanges, says the server failed on its own rather than as
the scenario asked. A check that met one and did not pass is re-run once (conformance.harness.execution); a requirement
judged otherwise the second time is FLAKY, with the server's error text, never a plain FAIL or PASS."""

from __future__ import annotations

from typing import Any

from conformance.rules.scenarios import script_named_in, scripts_a_failure
from conformance.transport.exchanges import Exchange

SHOWN = 300  # characters of a server's error text


def transient_errors(exchanges: list[Exchange], scripts: dict[str, dict[str, Any]]) -> list[str]:
    """Every 5xx answer (but 501, which the contract allows for an undeclared abort), and every `error` event in
    a stream whose scenario scripts no failure: each as one line naming the request and the server's text."""
    found = []
    for exchange in exchanges:
        where = f"{exchange.method} {exchange.url}"
        name = script_named_in(exchange.request_body)
        scripted_failure = name in scripts and scripts_a_failure(scripts[name])
        # A 502 to a turn scripted to fail is the scenario: a failed turn not streamed (OPENAI-003).
        if exchange.status is not None and exchange.status >= 500 and exchange.status != 501:
            if not (scripted_failure and exchange.status == 502):
                found.append(f"{where} answered {exchange.status}: {exchange.body[:SHOWN]}")
        if name not in scripts or scripted_failure:
            continue
        for event in exchange.events:
            if isinstance(event, dict) and event.get("type") == "error":
                text = str(event.get("message") or event.get("error") or event)[:SHOWN]
                found.append(f"{where}: an `error` event the scenario {name} does not script: {text}")
    return found
