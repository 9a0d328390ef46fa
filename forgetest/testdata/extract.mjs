// Extracts from the published REST description (npm package @octokit/openapi)
// the webhook-delivery operations, the operations a bot commonly calls (listed
// by operationId in operations.txt beside this file), and every component they
// reference, so that the fake forge is built from the description itself.
// Usage, from this directory, with the unpacked package beside it
// (npm pack @octokit/openapi@VERSION; tar xzf …):
//
//	node extract.mjs package/generated/api.github.com.json > rest-description.json
import { readFileSync } from "node:fs";
import { resolve } from "node:path";

const full = JSON.parse(readFileSync(process.argv[2], "utf8"));
const pkg = JSON.parse(readFileSync(resolve(process.argv[2], "../../package.json"), "utf8"));
const operations = new Set(
  readFileSync(new URL("operations.txt", import.meta.url), "utf8").split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("#")),
);
const paths = {};
for (const [p, item] of Object.entries(full.paths)) {
  if (/\/hook(s\/\{hook_id\})?\/deliveries/.test(p)) paths[p] = item;
  for (const [method, op] of Object.entries(item)) {
    if (operations.has(op?.operationId)) (paths[p] ??= {})[method] = op;
  }
}
const components = {};
const seen = new Set();
function walk(v) {
  if (Array.isArray(v)) return v.forEach(walk);
  if (v === null || typeof v !== "object") return;
  for (const [k, x] of Object.entries(v)) {
    if (k === "$ref" && typeof x === "string" && !seen.has(x)) {
      seen.add(x);
      const [, , kind, name] = x.split("/"); // "#/components/<kind>/<name>"
      const c = kind === "examples" ? full.components[kind][name] : prune(full.components[kind][name], prose);
      (components[kind] ??= {})[name] = c;
      walk(c);
    } else walk(x);
  }
}
for (const id of operations) {
  if (!Object.values(paths).some((item) => Object.values(item).some((op) => op?.operationId === id))) {
    throw new Error(`operation ${id} is not in the description`);
  }
}
// The fake reads schemas, parameters and responses, never the prose: it is
// pruned (keys "description", "externalDocs", "x-github", "x-octokit"), and
// so are the examples of the bot operations (keys "example", "examples");
// those of the delivery logs are kept, as catch-up's tests decode them.
const prose = new Set(["description", "externalDocs", "x-github", "x-octokit"]);
const proseAndExamples = new Set([...prose, "example", "examples"]);
function prune(v, keys) {
  if (Array.isArray(v)) return v.map((x) => prune(x, keys));
  if (v === null || typeof v !== "object") return v;
  return Object.fromEntries(
    Object.entries(v)
      .filter(([k, x]) => !keys.has(k) || (k === "description" && typeof x !== "string"))
      .map(([k, x]) => [k, k === "properties" ? Object.fromEntries(Object.entries(x).map(([n, y]) => [n, prune(y, keys)])) : prune(x, keys)]),
  );
}
for (const [p, item] of Object.entries(paths)) paths[p] = prune(item, /\/deliveries/.test(p) ? prose : proseAndExamples);
walk(paths);
for (const kind of Object.keys(components)) {
  components[kind] = Object.fromEntries(Object.entries(components[kind]).sort(([a], [b]) => a.localeCompare(b)));
}
const out = {
  openapi: full.openapi,
  info: { title: full.info.title, version: full.info.version },
  "x-source": { npm: `${pkg.name}@${pkg.version}`, file: "generated/api.github.com.json" },
  servers: full.servers,
  paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b))),
  components,
};
process.stdout.write(JSON.stringify(out, null, 2) + "\n");
