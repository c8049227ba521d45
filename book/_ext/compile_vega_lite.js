// Compiles Vega-Lite specifications to Vega with the book's pinned Vega-Lite (the bundles
// tools/fetch_vega.py fetched), so that the pages draw their charts with Vega alone.
// Usage: node compile_vega_lite.js VEGA_LITE_JS VEGA_JS < specs.json > compiled.json
// Standard input: a JSON array of Vega-Lite specifications; standard output: the array of their
// Vega specifications, in the same order. Any warning Vega-Lite logs while compiling fails the
// run (exit status 1, the message on standard error), as the book's build is strict.
"use strict";
const fs = require("fs");
const vm = require("vm");

const [vegaLitePath, vegaPath] = process.argv.slice(2);
if (!vegaLitePath || !vegaPath) {
  process.stderr.write("usage: node compile_vega_lite.js VEGA_LITE_JS VEGA_JS < specs.json\n");
  process.exit(2);
}
// The browser bundles are UMD: in a context with no module system they set globals, as in a page.
const context = vm.createContext({ console, structuredClone, URL, TextEncoder, TextDecoder });
context.globalThis = context;
context.self = context;
for (const path of [vegaPath, vegaLitePath]) {
  vm.runInContext(fs.readFileSync(path, "utf8"), context, { filename: path });
}
const problems = [];
const logger = {
  level() { return logger; },
  warn(...args) { problems.push(args.join(" ")); return logger; },
  info() { return logger; },
  debug() { return logger; },
  error(...args) { problems.push(args.join(" ")); return logger; },
};
const specs = JSON.parse(fs.readFileSync(0, "utf8"));
const compiled = specs.map((spec) => context.vegaLite.compile(spec, { logger }).spec);
if (problems.length) {
  process.stderr.write("Vega-Lite: " + problems.join("\nVega-Lite: ") + "\n");
  process.exit(1);
}
process.stdout.write(JSON.stringify(compiled));
