// The client against a real `mnemon serve`: its types match the server's OpenAPI document,
// every operation has a method, each method reaches its route, errors come back typed, the
// export streams and a chat history uploads as a stream.

import assert from "node:assert/strict";
import { createReadStream, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { Readable } from "node:stream";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";

import { ERROR_CODES, Mnemon, MnemonError, OPERATIONS } from "../dist/index.js";
import { generate } from "../scripts/generate.mjs";
import { ADMIN, BOUND, start } from "./server.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const fixtures = join(here, "..", "..", "..", "tests", "fixtures", "chats");
let server;
let admin;

before(async () => {
  server = await start();
  admin = new Mnemon({ baseUrl: server.baseUrl, token: ADMIN });
});

after(async () => {
  await server?.stop();
});

test("the generated types match the server's OpenAPI document", async () => {
  const doc = await (await fetch(`${server.baseUrl}/openapi.json`)).json();
  const committed = readFileSync(join(here, "..", "src", "generated.ts"), "utf8");
  assert.equal(generate(doc), committed, "src/generated.ts is stale: run `npm run generate` against `mnemon serve`");
  assert.deepEqual([...ERROR_CODES].sort(), [...doc.components.schemas.Code.enum].sort());
});

test("every operation of the document has a method", () => {
  const camel = (id) => id.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
  const missing = Object.keys(OPERATIONS).filter((id) => typeof Mnemon.prototype[camel(id)] !== "function");
  assert.deepEqual(missing, []);
});

test("memories: save, recall, search, list, get, update, count, delete", async () => {
  const saved = await admin.saveMemories({
    user_id: "ana",
    memories: ["Ana is vegetarian.", { content: "Deploys go through staging.", tags: ["ops"], kind: "procedural", ts: "2026-03-01T10:00:00" }],
  });
  assert.deepEqual(saved.memories.map((m) => m.stored), [true, true]);
  const recalled = await admin.recallMemories({ user_id: "ana", query: "what can I cook for Ana?" });
  assert.match(recalled.context, /vegetarian/);
  const found = await admin.searchMemories({ user_id: "ana", query: "deploy", filter: { tags_any: ["ops"] } });
  assert.equal(found.hits[0].note.content, "Deploys go through staging.");
  const page = await admin.listMemories({ user_id: "ana", limit: 10 });
  assert.equal(page.notes.length, 2);
  const key = found.hits[0].note.key;
  const got = await admin.getMemory({ key, user_id: "ana" });
  assert.equal(got.content, "Deploys go through staging.");
  const updated = await admin.updateMemory({ key, user_id: "ana", importance: 0.9 });
  assert.equal(updated.importance, 0.9);
  assert.equal((await admin.countMemories({ user_id: "ana" })).kinds.procedural, 1);
  await admin.deleteMemory({ key, user_id: "ana" });
  await assert.rejects(admin.getMemory({ key, user_id: "ana" }), (e) => e instanceof MnemonError && e.code === "not_found" && e.status === 404);
});

test("conversation: messages stored once per idempotency key, profile, timeline, decisions, activity", async () => {
  const messages = [
    { role: "user", content: "I adopted a beagle named Toby.", ts: "2026-03-01T10:00:00" },
    { role: "assistant", content: "Congratulations on Toby!", ts: "2026-03-01T10:00:05" },
  ];
  const first = await admin.addMessages({ user_id: "ben", messages }, { idempotencyKey: "toby-1" });
  const again = await admin.addMessages({ user_id: "ben", messages }, { idempotencyKey: "toby-1" });
  assert.equal(first.stored.length, 1);
  assert.equal(again.stored.length, 0);
  const profile = await admin.getProfile({ user_id: "ben" });
  assert.ok(Array.isArray(profile.relations));
  const timeline = await admin.readTimeline({ user_id: "ben" });
  assert.equal(timeline.rounds.length, 1);
  const decisions = await admin.readDecisions({ user_id: "ben" });
  assert.ok(decisions.decisions.length >= 1);
  const activity = await admin.readActivity({ user_id: "ben" });
  assert.equal(activity.months.length, 1);
});

test("the export, whole and streamed, stores and users, copy and move, forget", async () => {
  await admin.saveMemories({ user_id: "cy", memories: ["Cy rides a red bicycle."] });
  const whole = await admin.exportMemories({ user_id: "cy" });
  assert.match(whole, /red bicycle/);
  let streamed = "";
  for await (const part of admin.exportStream({ user_id: "cy" })) streamed += part;
  assert.equal(streamed, whole);
  const dump = await admin.exportMemories({ user_id: "cy", format: "jsonl" });
  assert.match(dump.split("\n")[0], /^\{/);
  assert.ok((await admin.listUsers()).some((u) => u.user === "cy"));
  const key = (await admin.listMemories({ user_id: "cy" })).notes[0].key;
  const copied = await admin.copyMemories({ user_id: "cy", keys: [key], to: "other.db" });
  assert.deepEqual(copied.copied, [key]);
  await admin.moveMemories({ user_id: "cy", keys: [key], to: "third.db", store: "other.db" });
  const stores = await admin.listStores();
  assert.ok(stores.stores.length >= 3, JSON.stringify(stores));
  const forgotten = await admin.forgetUser({ user_id: "cy" });
  assert.ok(forgotten.notes >= 1, JSON.stringify(forgotten));
  assert.equal((await admin.health()).status, "ok");
  assert.match(await admin.metrics(), /mnemon_http_requests_total/);
});

test("errors are typed: code, status and field", async () => {
  await assert.rejects(admin.saveMemories({ user_id: "ana", memories: ["  "] }), (e) => {
    assert.ok(e instanceof MnemonError);
    assert.equal(e.code, "empty_memory");
    assert.equal(e.status, 400);
    assert.equal(e.field, "memories[0].content");
    assert.ok(ERROR_CODES.includes(e.code));
    return true;
  });
  const stranger = new Mnemon({ baseUrl: server.baseUrl, token: "not-a-token-of-this-server" });
  await assert.rejects(stranger.countMemories(), (e) => e.code === "unauthorized" && e.status === 401);
  const bound = new Mnemon({ baseUrl: server.baseUrl, token: BOUND });
  await assert.rejects(bound.countMemories({ user_id: "ana" }), (e) => e.code === "forbidden" && e.field === "user_id");
  assert.equal((await bound.saveMemories({ memories: ["Mine alone."] })).memories[0].stored, true);
  await assert.rejects(admin.recallMemories({ query: "x", top_k: -1 }), (e) => e.code === "invalid_input" && e.field === "top_k");
});

test("a chat history uploads as a stream, and again stores nothing", async () => {
  const stream = () => Readable.toWeb(createReadStream(join(fixtures, "claude.json")));
  const first = await admin.importChats(stream(), { format: "claude", user_id: "dee" });
  assert.equal(first.rounds_stored, 4);
  assert.equal(first.skipped.length, 3);
  const again = await admin.importChats(readFileSync(join(fixtures, "claude.json")), { format: "claude", user_id: "dee" });
  assert.deepEqual([again.rounds_stored, again.rounds_duplicate], [0, 4]);
  await assert.rejects(admin.importChats("not json", { format: "chatgpt", user_id: "dee" }), (e) => e.code === "invalid_input" && e.field === "file");
});
