// A scripted chat model provider for the VS Code extension's tests (vendor
// "fake", models fake-large and fake-small). Every request is appended as
// one JSON line to the file named by FAKE_MODEL_LOG, and the last user text
// picks the behaviour:
//   SLOW      streams "tick " 200 times, 50 ms apart, until cancelled
//             (then logs {event:"cancelled"})
//   CALLTOOL  calls the first offered tool with {path:"README.md"}
//   FAIL      throws LanguageModelError.Blocked("fake refusal")
//   otherwise streams "FAKE(<model id>): <last user text>" in 4-character
//             chunks, 10 ms apart
// Normal finishes log {event:"done"}.
"use strict";

const fs = require("fs");
const vscode = require("vscode");

const MODELS = [
  {
    id: "fake-large",
    name: "Fake Large",
    family: "fake",
    version: "1",
    maxInputTokens: 100000,
    maxOutputTokens: 4096,
    capabilities: { toolCalling: true },
  },
  {
    id: "fake-small",
    name: "Fake Small",
    family: "fake",
    version: "1",
    maxInputTokens: 8000,
    maxOutputTokens: 1024,
    capabilities: { toolCalling: false },
  },
];

function log(entry) {
  const file = process.env.FAKE_MODEL_LOG;
  if (file) {
    fs.appendFileSync(file, JSON.stringify(entry) + "\n");
  }
}

function textOf(parts) {
  return (parts || [])
    .map((part) => (part instanceof vscode.LanguageModelTextPart ? part.value : ""))
    .join("");
}

function partJson(part) {
  if (part instanceof vscode.LanguageModelTextPart) {
    return { type: "text", text: part.value };
  }
  if (part instanceof vscode.LanguageModelToolCallPart) {
    return { type: "tool_call", callId: part.callId, name: part.name, input: part.input };
  }
  if (part instanceof vscode.LanguageModelToolResultPart) {
    return { type: "tool_result", callId: part.callId, content: textOf(part.content) };
  }
  return { type: "unknown", value: String(part && part.constructor && part.constructor.name) };
}

function roleName(role) {
  if (role === vscode.LanguageModelChatMessageRole.User) return "user";
  if (role === vscode.LanguageModelChatMessageRole.Assistant) return "assistant";
  return String(role);
}

// Resolves after `ms`, or as soon as `token` is cancelled.
function sleep(ms, token) {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      listener.dispose();
      resolve();
    }, ms);
    const listener = token.onCancellationRequested(() => {
      clearTimeout(timer);
      listener.dispose();
      resolve();
    });
  });
}

const provider = {
  provideLanguageModelChatInformation() {
    return MODELS;
  },

  async provideLanguageModelChatResponse(model, messages, options, progress, token) {
    const logged = messages.map((message) => ({
      role: roleName(message.role),
      parts: Array.from(message.content || []).map(partJson),
    }));
    const tools = (options.tools || []).map((tool) => tool.name);
    log({ event: "request", model: model.id, messages: logged, tools, modelOptions: options.modelOptions });

    const lastUser = [...messages]
      .reverse()
      .find((message) => message.role === vscode.LanguageModelChatMessageRole.User);
    const text = lastUser ? textOf(lastUser.content) : "";

    if (text.includes("SLOW")) {
      for (let i = 0; i < 200; i++) {
        if (token.isCancellationRequested) break;
        progress.report(new vscode.LanguageModelTextPart("tick "));
        await sleep(50, token);
      }
      if (token.isCancellationRequested) {
        log({ event: "cancelled", model: model.id });
        throw new vscode.CancellationError();
      }
    } else if (text.includes("CALLTOOL") && tools.length > 0) {
      progress.report(new vscode.LanguageModelToolCallPart("call-1", tools[0], { path: "README.md" }));
    } else if (text.includes("FAIL")) {
      log({ event: "failed", model: model.id });
      throw vscode.LanguageModelError.Blocked("fake refusal");
    } else {
      const reply = `FAKE(${model.id}): ${text}`;
      for (let at = 0; at < reply.length; at += 4) {
        if (token.isCancellationRequested) {
          log({ event: "cancelled", model: model.id });
          throw new vscode.CancellationError();
        }
        progress.report(new vscode.LanguageModelTextPart(reply.slice(at, at + 4)));
        await sleep(10, token);
      }
    }
    log({ event: "done", model: model.id });
  },

  provideTokenCount(model, text) {
    const value = typeof text === "string" ? text : textOf(Array.from(text.content || []));
    return Math.ceil(value.length / 4);
  },
};

function activate(context) {
  context.subscriptions.push(vscode.lm.registerLanguageModelChatProvider("fake", provider));
}

function deactivate() {}

module.exports = { activate, deactivate };
