// Runs the official openai client against one base URL and prints, as JSON, what
// it got: parsed answers, every streamed chunk/event, and the reassembled text.
// Usage: node openai_check.mjs <baseURL ending in /v1>
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.argv[2], apiKey: "sk-npm-check", maxRetries: 0 });
const messages = [
  { role: "system", content: "You are terse." },
  { role: "user", content: "Reach me at jane.doe@example.com — what is 17 * 3?" },
];
const out = {};

out.chat = await client.chat.completions.create({ model: "gpt-4o", messages });

const chatStream = await client.chat.completions.create({
  model: "gpt-4o", messages, stream: true, stream_options: { include_usage: true },
});
out.chatChunks = [];
out.chatText = "";
for await (const chunk of chatStream) {
  out.chatChunks.push(chunk);
  out.chatText += chunk.choices[0]?.delta?.content ?? "";
}

out.responses = await client.responses.create({ model: "gpt-4o", instructions: "Be terse.", input: "Name a prime above 100." });
out.responsesText = out.responses.output_text;

const respStream = await client.responses.create({ model: "gpt-4o", input: "Stream a greeting.", stream: true });
out.responsesEvents = [];
for await (const ev of respStream) {
  out.responsesEvents.push(ev);
}

out.models = await client.models.list().then((p) => p.data);

process.stdout.write(JSON.stringify(out));
