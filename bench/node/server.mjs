// A receiver built on the Node.js library forgehooks descends from, for the
// HTTP load comparison of bench/cmd/load: the library's createNodeMiddleware on
// node's own http server, with one handler registered with on("push"), the
// event the load sends. It is the library's documented use, nothing tuned.
//
//   node server.mjs --module DIR --addr 127.0.0.1:PORT --secret S [--path P]
//
// DIR is an npm prefix where the library is installed (bench/cmd/load installs
// it there, outside the repository). The library reads the delivery's headers
// under its own names (x-github-event, x-github-delivery, x-hub-signature-256),
// so the load tool sends those to this receiver.
//
// SIGTERM and SIGINT end it with process.exit, so that node's --cpu-prof, when
// given, writes its profile.

import { createServer } from "node:http";
import { createRequire } from "node:module";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { pathToFileURL } from "node:url";

const { values: args } = parseArgs({
  options: {
    module: { type: "string" },
    addr: { type: "string", default: "127.0.0.1:0" },
    secret: { type: "string" },
    path: { type: "string", default: "/" },
  },
});
if (!args.module || !args.secret) {
  console.error("usage: node server.mjs --module DIR --addr 127.0.0.1:PORT --secret S [--path P]");
  process.exit(2);
}
const [host, port] = splitHostPort(args.addr);
if (host !== "127.0.0.1") {
  // The load run only ever talks to the loopback interface.
  console.error(`--addr ${args.addr}: only 127.0.0.1 is allowed`);
  process.exit(2);
}

// The package is ESM and installed outside this directory, where a bare
// import would not find it: resolve it from the install prefix instead.
const entry = createRequire(join(args.module, "package.json")).resolve("@octokit/webhooks");
const { Webhooks, createNodeMiddleware } = await import(pathToFileURL(entry).href);

const webhooks = new Webhooks({ secret: args.secret });
// The counterpart of the Go receivers' push handlers (typed, go-github): it
// looks at the decoded payload's ref, so a 200 means the delivery was verified,
// parsed and dispatched.
webhooks.on("push", ({ payload }) => {
  if (typeof payload.ref !== "string" || payload.ref === "") {
    throw new Error("no ref");
  }
});
const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const middleware = createNodeMiddleware(webhooks, { path: args.path, log: quiet });

const server = createServer(async (req, res) => {
  // The middleware answers false, writing nothing, for other paths.
  if (!(await middleware(req, res))) {
    res.writeHead(404, { "content-type": "application/json" }).end('{"error":"not found"}');
  }
});
server.listen(port, host);

for (const sig of ["SIGTERM", "SIGINT"]) {
  process.on(sig, () => process.exit(0));
}

function splitHostPort(addr) {
  const i = addr.lastIndexOf(":");
  if (i < 0) {
    return [addr, 0];
  }
  return [addr.slice(0, i), Number(addr.slice(i + 1))];
}
