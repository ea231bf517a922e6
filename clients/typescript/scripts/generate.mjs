#!/usr/bin/env node
// Generates src/generated.ts from mnemon's OpenAPI document: an interface per schema, the error
// codes as a union, and a table of every operation (method, path, its path and query
// parameters, what it takes and answers). No dependencies: the document is read as JSON.
//
//   node scripts/generate.mjs OPENAPI.json            writes src/generated.ts
//   node scripts/generate.mjs OPENAPI.json --check    fails if src/generated.ts differs
//   node scripts/generate.mjs http://HOST:PORT/openapi.json [--check]   the document of a running server

import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const target = join(here, "..", "src", "generated.ts");

/** The TypeScript type of a JSON Schema. */
function type(schema, indent = "") {
  if (schema === true || schema === undefined || (typeof schema === "object" && Object.keys(schema).length === 0)) {
    return "unknown";
  }
  if (schema.$ref) return schema.$ref.split("/").pop();
  if (schema.oneOf) return union(schema.oneOf.map((s) => type(s, indent)));
  if (schema.anyOf) return union(schema.anyOf.map((s) => type(s, indent)));
  if (schema.allOf) {
    const parts = schema.allOf.map((s) => type(s, indent));
    return parts.length === 1 ? parts[0] : parts.map((p) => `(${p})`).join(" & ");
  }
  if (schema.enum) return union(schema.enum.map((v) => JSON.stringify(v)));
  if ("const" in schema) return JSON.stringify(schema.const);
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  return union(types.map((t) => single(t, schema, indent)));
}

function single(t, schema, indent) {
  switch (t) {
    case "string":
      return "string";
    case "integer":
    case "number":
      return "number";
    case "boolean":
      return "boolean";
    case "null":
      return "null";
    case "array":
      return `${wrap(type(schema.items ?? {}, indent))}[]`;
    case "object":
    case undefined:
      return object(schema, indent);
    default:
      return "unknown";
  }
}

function wrap(t) {
  return /[|&]/.test(t) ? `(${t})` : t;
}

function union(types) {
  const unique = [...new Set(types)];
  return unique.length === 1 ? unique[0] : unique.join(" | ");
}

function comment(text, indent) {
  if (!text) return "";
  const lines = text.replace(/\*\//g, "*\\/").split("\n");
  return `${indent}/**\n${lines.map((l) => `${indent} * ${l}`.trimEnd()).join("\n")}\n${indent} */\n`;
}

function object(schema, indent) {
  const props = schema.properties ?? {};
  const required = new Set(schema.required ?? []);
  const inner = indent + "  ";
  let body = "";
  for (const [name, prop] of Object.entries(props)) {
    const key = /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : JSON.stringify(name);
    body += comment(prop.description, inner);
    body += `${inner}${key}${required.has(name) ? "" : "?"}: ${type(prop, inner)};\n`;
  }
  const extra = schema.additionalProperties;
  if (extra && extra !== false) {
    body += `${inner}[key: string]: ${extra === true ? "unknown" : type(extra, inner)};\n`;
  } else if (!schema.properties && extra === undefined) {
    body += `${inner}[key: string]: unknown;\n`;
  }
  return body ? `{\n${body}${indent}}` : "{ [key: string]: never }";
}

/** The operations of the document, in path order. */
function operations(doc) {
  const out = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const params = op.parameters ?? [];
      const pathParams = params.filter((p) => p.in === "path").map((p) => p.name);
      const query = params.filter((p) => p.in === "query");
      const schema = op.requestBody?.content?.["application/json"]?.schema;
      // A body that is a file (an import) is sent as it is; the arguments are the query's.
      const upload = schema?.type === "string";
      const json = upload ? undefined : schema;
      const ok = op.responses?.["200"]?.content ?? {};
      const [kind, answer] = Object.entries(ok)[0] ?? ["application/json", {}];
      out.push({
        id: op.operationId,
        method: method.toUpperCase(),
        path,
        pathParams,
        query,
        body: json,
        upload,
        response: kind.startsWith("application/json") ? type(answer.schema ?? {}) : "string",
        text: !kind.startsWith("application/json"),
        summary: op.summary ?? op.description ?? "",
      });
    }
  }
  return out;
}

/** The arguments of an operation: its body's fields (a body schema) or its parameters. */
function args(op) {
  if (op.body) {
    const base = type(op.body);
    const extra = op.pathParams.map((p) => `${p}: string`);
    return extra.length ? `${base} & { ${extra.join("; ")} }` : base;
  }
  const fields = [
    ...op.pathParams.map((p) => `${p}: string`),
    ...op.query.map((q) => `${q.name}${q.required ? "" : "?"}: ${type(q.schema ?? {})}`),
  ];
  return fields.length ? `{ ${fields.join("; ")} }` : "{ [key: string]: never }";
}

export function generate(doc) {
  let out = `// Generated by scripts/generate.mjs from mnemon's OpenAPI document (${doc.info.title} ${doc.info.version}).
// Do not edit: run \`npm run generate\` against a running \`mnemon serve\` instead.

`;
  const schemas = doc.components?.schemas ?? {};
  for (const [name, schema] of Object.entries(schemas)) {
    out += comment(schema.description, "");
    const t = type(schema);
    out += t.startsWith("{") ? `export interface ${name} ${t}\n\n` : `export type ${name} = ${t};\n\n`;
  }
  out += `/** Every error code the server answers with, each with one HTTP status. */\nexport type ErrorCode = Code;\n\n`;
  out += `/** Every error code, for checks and exhaustive switches. */\n`;
  out += `export const ERROR_CODES: readonly ErrorCode[] = ${JSON.stringify(schemas.Code?.enum ?? [])};\n\n`;
  const ops = operations(doc);
  out += `/** What each operation takes and answers. */\nexport interface Operations {\n`;
  for (const op of ops) {
    out += comment(op.summary.split("\n")[0], "  ");
    out += `  ${op.id}: { args: ${args(op)}; response: ${op.response} };\n`;
  }
  out += `}\n\n/** How each operation is called. */\nexport const OPERATIONS = {\n`;
  for (const op of ops) {
    const where = op.upload ? "upload" : op.body ? "body" : "query";
    out += `  ${op.id}: { method: ${JSON.stringify(op.method)}, path: ${JSON.stringify(op.path)}, `;
    out += `pathParams: ${JSON.stringify(op.pathParams)}, args: ${JSON.stringify(where)}, text: ${op.text} },\n`;
  }
  out += `} as const;\n\n/** An operation's name. */\nexport type OperationId = keyof Operations;\n`;
  return out;
}

async function main() {
  const [source, flag] = process.argv.slice(2);
  if (!source) {
    console.error("usage: generate.mjs OPENAPI.json|URL [--check]");
    process.exit(2);
  }
  const text = source.startsWith("http") ? await (await fetch(source)).text() : readFileSync(source, "utf8");
  const generated = generate(JSON.parse(text));
  if (flag === "--check") {
    const current = readFileSync(target, "utf8");
    if (current !== generated) {
      console.error("src/generated.ts does not match the server's OpenAPI document: run `npm run generate`");
      process.exit(1);
    }
    console.log("src/generated.ts matches the OpenAPI document");
    return;
  }
  writeFileSync(target, generated);
  console.log(`wrote ${target}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await main();
}
