// Runs the official Anthropic TypeScript SDK against one base URL and prints, as
// JSON, what it got: whole messages, every streamed event, the stream helper's
// final message. Usage: node anthropic_check.mjs <baseURL without /v1>
import Anthropic from "@anthropic-ai/sdk";

const client = new Anthropic({ baseURL: process.argv[2], apiKey: "sk-ant-npm-check", maxRetries: 0 });
const model = "claude-sonnet-4-20250514";
const system = [{ type: "text", text: "You are terse.", cache_control: { type: "ephemeral", ttl: "1h" } }];
const tools = [{
  name: "get_weather",
  description: "The weather in a city.",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
}];
// A 1x1 transparent PNG.
const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";
const out = {};

// 1. A whole message.
out.plain = await client.messages.create({
  model, max_tokens: 256, system,
  messages: [{ role: "user", content: "Reach me at jane.doe@example.com — what is 17 * 3?" }],
});

// 2. A whole message that calls a tool.
out.tool = await client.messages.create({
  model, max_tokens: 256, system, tools,
  messages: [{ role: "user", content: "Paris" }],
});

// 3. A raw stream with thinking, every event kept.
const raw = await client.messages.create({
  model, max_tokens: 2048, stream: true, thinking: { type: "enabled", budget_tokens: 1024 },
  messages: [{ role: "user", content: "Stream a greeting." }],
});
out.streamEvents = [];
out.streamText = "";
for await (const ev of raw) {
  out.streamEvents.push(ev);
  if (ev.type === "content_block_delta" && ev.delta.type === "text_delta") out.streamText += ev.delta.text;
}

// 4. The stream helper with tools (tool_use arguments as input_json_delta), then
// the tool result sent back, streamed.
const helper = client.messages.stream({
  model, max_tokens: 256, tools,
  messages: [{ role: "user", content: "Berlin" }],
});
out.toolStream = await helper.finalMessage();
const use = out.toolStream.content.find((b) => b.type === "tool_use");
const back = client.messages.stream({
  model, max_tokens: 256, tools,
  messages: [
    { role: "user", content: "Berlin" },
    { role: "assistant", content: out.toolStream.content },
    { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "sunny, 21 °C" }] },
  ],
});
out.toolResult = await back.finalMessage();

// 5. An image and a document.
out.media = await client.messages.create({
  model, max_tokens: 256,
  messages: [{
    role: "user", content: [
      { type: "image", source: { type: "base64", media_type: "image/png", data: png } },
      { type: "document", source: { type: "base64", media_type: "application/pdf", data: "JVBERi0xLjQKJcTl8uXrCg==" }, title: "notes.pdf" },
      { type: "text", text: "What is in these?" },
    ],
  }],
});

process.stdout.write(JSON.stringify(out));
