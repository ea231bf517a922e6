// The README's examples, as written, against a real `mnemon serve` without tokens (the examples
// name none): each ```js block runs in its own Node process, importing the built package.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";

import { start } from "./server.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const readme = readFileSync(join(here, "..", "README.md"), "utf8");
const blocks = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]);
const dist = pathToFileURL(join(here, "..", "dist", "index.js")).href;
let server;

before(async () => {
  server = await start({ tokens: false });
});

after(async () => {
  await server?.stop();
});

test("the README has examples", () => assert.ok(blocks.length >= 2));

blocks.forEach((code, i) => {
  test(`README example ${i + 1} runs`, () => {
    const file = join(server.dir, `example-${i + 1}.mjs`);
    writeFileSync(file, code.replaceAll('"mnemon-client"', JSON.stringify(dist)).replaceAll("http://127.0.0.1:7424", server.baseUrl));
    const out = execFileSync(process.execPath, [file], { encoding: "utf8" });
    if (i === 0) assert.match(out, /Toby/);
    if (i === 1) assert.match(out, /empty_memory 400 memories\[0\]\.content/);
  });
});
