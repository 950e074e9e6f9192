"""Run inside a fresh interpreter by server/aiapi/contract.py: import a generated package,
call each planned method against the mock, write one JSON report per call.

A process of its own so that packages of the same name from different documents never
meet in one sys.modules. What each report holds (kind, detail, whether a request went
out, the raw answer) is the same for the TypeScript and Go drivers (contract_drivers/);
contract.py judges it.
"""

from __future__ import annotations

import importlib
import json
import sys
from typing import Any


def main(folder: str, package: str, plan_path: str, report_path: str) -> int:
    import httpx
    import pydantic

    sys.path.insert(0, folder)
    client_module = importlib.import_module(f"{package}.client")
    with open(plan_path, encoding="utf-8") as plan_file:
        plan = json.load(plan_file)
    reports: list[dict[str, Any]] = []
    seen: dict[str, Any] = {}

    def on_request(request: httpx.Request) -> None:
        seen["sent"] = True

    def on_response(response: httpx.Response) -> None:
        seen["response"] = response  # read by the client; its body is taken after the call

    with client_module.Client(
        plan["base_url"], headers=plan["headers"], params=plan["params"], timeout=60.0
    ) as client:
        client.http.event_hooks = {"request": [on_request], "response": [on_response]}
        for call in plan["calls"]:
            seen.clear()
            arguments = dict(call["arguments"])
            if "content" in arguments:
                arguments["content"] = str(arguments["content"]).encode()
            report: dict[str, Any] = {"index": call["index"], "kind": "ok"}
            try:
                getattr(client, call["method"])(**arguments)
            except httpx.HTTPStatusError as exc:
                report.update(kind="status", detail=exc.response.text[:300])
            except pydantic.ValidationError as exc:
                report.update(kind="invalid-answer", detail=str(exc)[:600])
            except httpx.HTTPError as exc:
                report.update(kind="transport", error=type(exc).__name__, detail=str(exc)[:300])
            except Exception as exc:  # the generated client itself failed
                report.update(kind="raised", error=type(exc).__name__, detail=str(exc)[:300])
            report["sent"] = bool(seen.get("sent"))
            if report["kind"] != "ok" and "response" in seen:
                report["answer"] = answer(seen["response"])
            reports.append(report)
    with open(report_path, "w", encoding="utf-8") as out:
        json.dump(reports, out)
    return 0


def answer(response: Any) -> dict[str, Any]:
    try:
        body = response.content.decode("utf-8", "replace")
    except Exception:  # not read (a transport error), or not decodable
        body = ""
    return {
        "status": response.status_code,
        "contentType": response.headers.get("content-type", ""),
        "body": body[:200_000],
    }


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
