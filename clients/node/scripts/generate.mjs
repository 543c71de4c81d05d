// Regenerates the package's messages and service descriptor, src/gen/queens_pb.js and its
// types src/gen/queens_pb.d.ts, from ../../proto/queens.proto with buf and protoc-gen-es, the
// generator the page uses (web/build.mjs). The output is committed, so that installing the
// package needs no code generation; a test of the server's suite (tests/node_package.rs)
// generates into a scratch folder and compares it with the committed files.
//
//   node scripts/generate.mjs [OUT]      default OUT: src/gen
//
// QUEENS_NODE_MODULES names the node_modules folder holding the tools (default:
// ./node_modules, from `npm ci` here).

import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const out = resolve(process.argv[2] ?? join(here, "src", "gen"));
const modules = resolve(process.env.QUEENS_NODE_MODULES ?? join(here, "node_modules"));

const template = {
  version: "v2",
  plugins: [
    {
      local: ["node", join(modules, "@bufbuild/protoc-gen-es/bin/protoc-gen-es")],
      out,
      // Plain JavaScript with declaration files beside it; relative imports end in .js, as
      // Node's ES modules need.
      opt: ["target=js+dts", "import_extension=js"],
    },
  ],
};
rmSync(out, { recursive: true, force: true });
execFileSync(
  join(modules, "@bufbuild/buf/bin/buf"),
  ["generate", join(here, "..", "..", "proto"), "--template", JSON.stringify(template)],
  { cwd: here, stdio: "inherit" },
);
console.log(`generated ${out}`);
