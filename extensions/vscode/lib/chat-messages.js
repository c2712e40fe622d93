'use strict';
// A `chat.request`'s conversation as vscode.lm messages. The API has no
// system role, so system text is folded into the first user message; tool
// calls belong to assistant messages and tool results to user messages.

const vscode = require('vscode');

/** A conversation the API cannot express; the request ends with `failed` and this message. */
class ChatInputError extends Error {}

/**
 * @param {Array<{role: string, content: Array<object>}>} messages
 * @returns {import('vscode').LanguageModelChatMessage[]}
 */
function toChatMessages(messages) {
  if (!Array.isArray(messages)) {
    throw new ChatInputError('chat.request has no "messages" array');
  }
  const system = [];
  const converted = [];
  messages.forEach((message, index) => {
    const where = `message ${index + 1} (${message?.role})`;
    const parts = Array.isArray(message?.content) ? message.content : [];
    if (message?.role === 'system') {
      system.push(...parts.map((part) => textOf(part, where)));
    } else if (message?.role === 'user') {
      converted.push({ role: 'user', parts: parts.map((part) => userPart(part, where)) });
    } else if (message?.role === 'assistant') {
      converted.push({ role: 'assistant', parts: parts.map((part) => assistantPart(part, where)) });
    } else {
      throw new ChatInputError(`${where}: the role must be system, user or assistant`);
    }
  });
  if (system.length > 0) {
    foldSystem(system.join('\n\n'), converted);
  }
  return converted.map(({ role, parts }) =>
    role === 'user' ? vscode.LanguageModelChatMessage.User(parts) : vscode.LanguageModelChatMessage.Assistant(parts),
  );
}

/**
 * Puts the system text at the head of the first user message: into its
 * leading text part, so the model reads one instruction-then-question text,
 * or as a text part of its own before tool results.
 */
function foldSystem(systemText, converted) {
  const firstUser = converted.find((message) => message.role === 'user');
  if (!firstUser) {
    converted.unshift({ role: 'user', parts: [new vscode.LanguageModelTextPart(systemText)] });
  } else if (firstUser.parts[0] instanceof vscode.LanguageModelTextPart) {
    firstUser.parts[0] = new vscode.LanguageModelTextPart(`${systemText}\n\n${firstUser.parts[0].value}`);
  } else {
    firstUser.parts.unshift(new vscode.LanguageModelTextPart(systemText));
  }
}

function textOf(part, where) {
  if (part?.type !== 'text' || typeof part.text !== 'string') {
    throw new ChatInputError(`${where}: system messages may hold only text parts, not ${JSON.stringify(part?.type)}`);
  }
  return part.text;
}

function userPart(part, where) {
  if (part?.type === 'text' && typeof part.text === 'string') {
    return new vscode.LanguageModelTextPart(part.text);
  }
  if (part?.type === 'tool_result' && typeof part.callId === 'string') {
    const content = typeof part.content === 'string' ? part.content : JSON.stringify(part.content ?? '');
    return new vscode.LanguageModelToolResultPart(part.callId, [new vscode.LanguageModelTextPart(content)]);
  }
  throw new ChatInputError(`${where}: a user message holds text and tool_result parts (with callId), not ${JSON.stringify(part?.type)}`);
}

function assistantPart(part, where) {
  if (part?.type === 'text' && typeof part.text === 'string') {
    return new vscode.LanguageModelTextPart(part.text);
  }
  if (part?.type === 'tool_call' && typeof part.callId === 'string' && typeof part.name === 'string') {
    const input = part.input ?? {};
    if (typeof input !== 'object' || Array.isArray(input)) {
      throw new ChatInputError(`${where}: the input of tool call ${part.callId} (${part.name}) is not a JSON object`);
    }
    return new vscode.LanguageModelToolCallPart(part.callId, part.name, input);
  }
  throw new ChatInputError(`${where}: an assistant message holds text and tool_call parts (with callId and name), not ${JSON.stringify(part?.type)}`);
}

module.exports = { toChatMessages, ChatInputError };
