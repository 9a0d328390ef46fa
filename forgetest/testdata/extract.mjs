// Extracts from the published REST description (npm package @octokit/openapi)
// the webhook-delivery operations, the operations an app's handlers are tested
// with (an installation's access token, an issue comment), and every component
// they reference, so that the fake forge is built from the description itself. Usage, from a directory
// holding the unpacked package (npm pack @octokit/openapi@VERSION; tar xzf …):
//
//	node extract.mjs package/generated/api.github.com.json > rest-description.json
import { readFileSync } from "node:fs";

const full = JSON.parse(readFileSync(process.argv[2], "utf8"));
const pkg = JSON.parse(readFileSync(new URL("../package.json", "file://" + process.cwd() + "/" + process.argv[2]), "utf8"));
const operations = new Set(["apps/create-installation-access-token", "issues/create-comment"]);
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
      (components[kind] ??= {})[name] = full.components[kind][name];
      walk(full.components[kind][name]);
    } else walk(x);
  }
}
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
