// Calls each planned operation through a generated TypeScript SDK (@hey-api/openapi-ts,
// its zod response validators on) against the mock, and writes one report per call:
// {index, kind, detail, sent, answer}, as server/aiapi/contract_driver.py does for Python.
//   node driver.cjs TRANSPILED_SDK PLAN REPORT
"use strict";
const fs = require("fs");
const path = require("path");

async function main() {
  const [folder, planPath, reportPath] = process.argv.slice(2);
  const plan = JSON.parse(fs.readFileSync(planPath, "utf8"));
  const sdk = require(path.resolve(folder, "sdk.gen.js"));
  const { client } = require(path.resolve(folder, "client.gen.js"));
  client.setConfig({ baseUrl: plan.base_url, headers: plan.headers });
  let seen = {};
  client.interceptors.request.use((request) => {
    seen.sent = true;
    return request;
  });
  client.interceptors.response.use(async (response) => {
    seen.answer = {
      status: response.status,
      contentType: response.headers.get("content-type") || "",
      body: (await response.clone().text()).slice(0, 200000),
    };
    return response;
  });
  const hasParams = Object.keys(plan.params).length > 0;
  const reports = [];
  for (const call of plan.calls) {
    seen = {};
    const report = { index: call.index, kind: "ok" };
    const fn = call.function ? sdk[call.function] : undefined;
    if (typeof fn !== "function") {
      report.kind = "missing";
      report.detail = `no SDK function ${call.function || "for this method and route"}`;
      reports.push(report);
      continue;
    }
    const options = { ...call.options };
    if (hasParams) {
      options.query = { ...(options.query || {}), ...plan.params };
    }
    try {
      const result = await fn(options);
      if (!result.response) {
        const error = result.error || {};
        const cause = error.cause || error;
        report.kind = "transport";
        report.error = (cause && (cause.code || cause.name)) || "error";
        report.detail = String((cause && cause.message) || error);
      } else if (!result.response.ok) {
        report.kind = "status";
        report.detail = (seen.answer && seen.answer.body.slice(0, 300)) || "";
      }
    } catch (error) {
      const zod = error && (error.name === "ZodError" || Array.isArray(error.issues));
      const message = String((error && error.message) || error).slice(0, 600);
      if (!seen.sent) {
        report.kind = zod ? "invalid-request" : "raised";
      } else if (zod || error instanceof SyntaxError) {
        report.kind = "invalid-answer";
      } else {
        report.kind = "raised";
      }
      report.error = (error && error.name) || "Error";
      report.detail = message;
    }
    report.sent = Boolean(seen.sent);
    if (report.kind !== "ok" && seen.answer) {
      report.answer = seen.answer;
    }
    reports.push(report);
  }
  fs.writeFileSync(reportPath, JSON.stringify(reports));
}

main().catch((error) => {
  process.stderr.write(String((error && error.stack) || error) + "\n");
  process.exit(1);
});
