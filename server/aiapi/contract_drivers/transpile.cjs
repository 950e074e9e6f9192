// Transpiles a generated TypeScript SDK (src/**/*.ts) to CommonJS, file by file, with
// TypeScript's own transpileModule: no type check (tsc --noEmit already ran), no bundler.
//   node transpile.cjs TYPESCRIPT_MODULE SRC OUT
"use strict";
const fs = require("fs");
const path = require("path");

const [typescriptModule, source, out] = process.argv.slice(2);
const ts = require(typescriptModule);

function walk(folder) {
  for (const entry of fs.readdirSync(folder, { withFileTypes: true })) {
    const full = path.join(folder, entry.name);
    if (entry.isDirectory()) {
      walk(full);
    } else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts")) {
      const { outputText } = ts.transpileModule(fs.readFileSync(full, "utf8"), {
        compilerOptions: {
          module: ts.ModuleKind.CommonJS,
          target: ts.ScriptTarget.ES2022,
          esModuleInterop: true,
        },
        fileName: full,
      });
      const target = path.join(out, path.relative(source, full)).replace(/\.ts$/, ".js");
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.writeFileSync(target, outputText);
    }
  }
}

walk(source);
