// The LangGraph JS SDK against `pausepoint serve`: a run streamed to its question, the
// question read back, the answer streamed, a resumable run rejoined after an event id.
// Prints one JSON object of what the client saw; tests/server/test_js_sdk.py checks it.
import { Client } from "@langchain/langgraph-sdk";

const [url, apiKey] = process.argv.slice(2);
const client = new Client({ apiUrl: url, apiKey });

async function collect(gen) {
  const parts = [];
  for await (const part of gen) parts.push({ event: part.event, data: part.data });
  return parts;
}

const thread = await client.threads.create({ metadata: { from: "js" } });
const tid = thread.thread_id;
const paused = await collect(
  client.runs.stream(tid, "approval", {
    input: { request: "deploy" },
    streamMode: ["values", "updates"],
  }),
);
const state = await client.threads.getState(tid);
const waiting = await client.threads.search({ status: "interrupted", metadata: { from: "js" } });
const resumed = await collect(
  client.runs.stream(tid, "approval", { command: { resume: "yes" }, streamMode: "values" }),
);
const after = await client.threads.get(tid);

// A resumable run, rejoined from its first event's id: the events after it, once each.
const second = (await client.threads.create()).thread_id;
const run = await client.runs.create(second, "approval", {
  input: { request: "ship" },
  streamMode: ["values"],
  streamResumable: true,
});
const joined = await collect(client.runs.joinStream(second, run.run_id));
const wait = await client.runs.join(second, run.run_id);

console.log(
  JSON.stringify({
    paused,
    state: { next: state.next, tasks: state.tasks, values: state.values },
    waiting: waiting.map((t) => t.thread_id).includes(tid),
    resumed,
    after: { status: after.status, values: after.values },
    joined,
    wait,
  }),
);
