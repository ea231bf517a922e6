// A real `mnemon serve` for the tests: the binary the workspace's test build made (or
// $MNEMON_BIN), on a free loopback port, with the hashing embedder, a token file (an admin token
// and one bound to the user `bound`) and a fresh data directory; stopped by `stop()`.

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { createServer } from "node:net";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";

export const ADMIN = "admin-token-0123456789";
export const BOUND = "bound-token-0123456789";

export function binary() {
  if (process.env.MNEMON_BIN) return process.env.MNEMON_BIN;
  const cache = process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache");
  const target = process.env.CARGO_TARGET_DIR ?? join(cache, "mnemon", "target");
  const path = join(target, "debug", "mnemon");
  if (!existsSync(path)) throw new Error(`no mnemon binary at ${path}: build it (cargo build -p mnemon-cli) or set MNEMON_BIN`);
  return path;
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Starts a server; `tokens: false` starts one without tokens (loopback only, as by default). */
export async function start({ tokens: withTokens = true, extra = [] } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "mnemon-ts-"));
  const tokens = join(dir, "tokens");
  writeFileSync(tokens, `${ADMIN} admin\n${BOUND} user=bound\n`);
  const port = await freePort();
  const child = spawn(binary(), [
    "serve", "--addr", `127.0.0.1:${port}`, "--embedder", "hashing", "--data", join(dir, "data"),
    ...(withTokens ? ["--token-file", tokens] : []), "--create-stores", ...extra,
  ], { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  child.stderr.on("data", (d) => (log += d));
  const baseUrl = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      const r = await fetch(`${baseUrl}/health`);
      if (r.ok) break;
    } catch {
      // not listening yet
    }
    if (i > 600 || child.exitCode !== null) throw new Error(`mnemon serve did not start:\n${log}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    baseUrl,
    dir,
    async stop() {
      child.kill();
      await new Promise((r) => child.once("exit", r));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
