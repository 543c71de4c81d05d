// Builds the page's script into dist/app.js (or into the folder given as the first argument):
// the client code is generated from ../proto/queens.proto by buf with protoc-gen-es, and
// src/main.js is bundled with it by esbuild into one minified file. The document and the
// style sheet need no build: the server embeds src/index.html and src/app.css. Every tool
// comes from package-lock.json (`npm ci`), so the same sources give the same bytes: a test
// of the server's suite rebuilds the bundle and compares it with the committed dist/.
//
// QUEENS_WEB_MODULES names the node_modules folder to use (default: ./node_modules).

import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = resolve(process.argv[2] ?? join(here, "dist"));
const modules = resolve(process.env.QUEENS_WEB_MODULES ?? join(here, "node_modules"));
const require = createRequire(join(modules, "package.json"));
const esbuild = require("esbuild");

// 1. The client: messages and the service descriptor, as plain JavaScript.
const gen = join(out, ".gen");
rmSync(gen, { recursive: true, force: true });
const template = {
  version: "v2",
  plugins: [
    {
      local: ["node", join(modules, "@bufbuild/protoc-gen-es/bin/protoc-gen-es")],
      out: gen,
      opt: ["target=js"],
    },
  ],
};
execFileSync(
  join(modules, "@bufbuild/buf/bin/buf"),
  ["generate", join(here, "..", "proto"), "--template", JSON.stringify(template)],
  { cwd: here, stdio: "inherit" },
);

// 2. One script: the page's code, the generated client, Connect's gRPC-Web transport. Every
// package is taken from `modules`, wherever the importing file lies, so that the bundle does
// not depend on which node_modules folders happen to exist around the sources.
const packages = {
  name: "packages",
  setup(build) {
    build.onResolve({ filter: /^queens-pb$/ }, () => ({ path: join(gen, "queens_pb.js") }));
    build.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.pluginData === "from-modules") return undefined;
      return build.resolve(args.path, {
        kind: args.kind,
        resolveDir: modules,
        pluginData: "from-modules",
      });
    });
  },
};
await esbuild.build({
  absWorkingDir: here,
  entryPoints: [join(here, "src", "main.js")],
  bundle: true,
  format: "esm",
  target: ["es2022"],
  minify: true,
  legalComments: "eof",
  charset: "utf8",
  plugins: [packages],
  outfile: join(out, "app.js"),
  logLevel: "warning",
});
rmSync(gen, { recursive: true, force: true });
console.log(`built ${join(out, "app.js")}`);
