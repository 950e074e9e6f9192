"""Run inside a fresh interpreter by server/aiapi/contract.py: import a generated package,
call each planned method against the mock, print one JSON outcome per call.

A process of its own so that packages of the same name from different documents never
meet in one sys.modules.
"""

from __future__ import annotations

import importlib
import json
import sys
from typing import Any

PRISM_ERROR = "stoplight.io/prism/errors#"


def main(folder: str, package: str, base_url: str, plan_path: str) -> int:
    import httpx
    import pydantic

    sys.path.insert(0, folder)
    client_module = importlib.import_module(f"{package}.client")
    with open(plan_path, encoding="utf-8") as plan_file:
        plan = json.load(plan_file)
    report: list[dict[str, Any]] = []
    with client_module.Client(
        base_url, headers=plan["headers"], params=plan["params"], timeout=60.0
    ) as client:
        for call in plan["plan"]:
            if "skip" in call:
                report.append(
                    {"method": call["method"], "route": call["route"],
                     "outcome": "skipped: untestable route", "detail": call["skip"]}
                )  # fmt: skip
                continue
            arguments = dict(call["arguments"])
            if "content" in arguments:
                arguments["content"] = str(arguments["content"]).encode()
            outcome, detail = "ok", ""
            try:
                getattr(client, call["method"])(**arguments)
            except httpx.HTTPStatusError as exc:
                outcome = f"mock answered {exc.response.status_code}"
                detail = exc.response.text[:300]
                if exc.response.status_code >= 500 and PRISM_ERROR in detail:
                    # Prism cannot play this operation (an object as text/plain...)
                    reason = detail.split(PRISM_ERROR, 1)[1].split('"', 1)[0]
                    outcome = f"skipped: the mock cannot answer ({reason})"
            except pydantic.ValidationError as exc:
                outcome = "answer did not validate"
                detail = str(exc)[:300]
            except httpx.HTTPError as exc:
                outcome = f"transport: {type(exc).__name__}"
                detail = str(exc)[:300]
            except Exception as exc:  # the generated client itself failed
                outcome = f"client raised {type(exc).__name__}"
                detail = str(exc)[:300]
            report.append(
                {"method": call["method"], "route": call["route"], "outcome": outcome,
                 "detail": detail}
            )  # fmt: skip
    json.dump(report, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
