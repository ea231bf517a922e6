// Compiled, not run (`npm run typecheck`): what the types allow and refuse. Each
// `@ts-expect-error` fails the check if the line below it ever compiles.

import { Mnemon, MnemonError, type ErrorCode, type Recalled } from "../src/index.js";

export async function usage(mnemon: Mnemon): Promise<void> {
  const recalled: Recalled = await mnemon.recallMemories({ user_id: "ana", query: "dog?", budget: 800 });
  const tokens: number = recalled.tokens;
  void tokens;
  // @ts-expect-error: `query` is required
  await mnemon.recallMemories({ user_id: "ana" });
  // @ts-expect-error: a memory is a string or an object with `content`
  await mnemon.saveMemories({ memories: [42] });
  // @ts-expect-error: no such field (the server refuses unknown fields too)
  await mnemon.searchMemories({ query: "x", colour: "red" });
  // @ts-expect-error: `format` is chatgpt, claude or jsonl
  await mnemon.importChats("[]", { format: "myspace" });
  const page = await mnemon.call("list_memories", { user_id: "ana", limit: 5 });
  void page.notes;
  // @ts-expect-error: no such operation
  await mnemon.call("drop_everything", {});
  try {
    await mnemon.countMemories();
  } catch (e) {
    if (e instanceof MnemonError) {
      const code: ErrorCode = e.code;
      // @ts-expect-error: not one of the server's codes
      const wrong: typeof code = "teapot";
      void wrong;
    }
  }
}
