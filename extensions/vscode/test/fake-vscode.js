'use strict';
// The little of the `vscode` module that the tool host and the chat service
// touch, so node can load them. Required before them: it makes
// `require('vscode')` answer this object.

const Module = require('node:module');

class CancellationError extends Error {}
class FileSystemError extends Error {}
class LanguageModelError extends Error {}
class LanguageModelTextPart {
  constructor(value) {
    this.value = value;
  }
}
class LanguageModelToolCallPart {}

class CancellationTokenSource {
  constructor() {
    const listeners = [];
    this.token = {
      isCancellationRequested: false,
      onCancellationRequested: (listener) => {
        listeners.push(listener);
        return { dispose() {} };
      },
    };
    this.cancel = () => {
      if (!this.token.isCancellationRequested) {
        this.token.isCancellationRequested = true;
        listeners.forEach((listener) => listener());
      }
    };
    this.dispose = () => {};
  }
}

function file(fsPath) {
  return { scheme: 'file', fsPath, toString: () => `file://${fsPath}` };
}

const vscode = {
  CancellationError,
  CancellationTokenSource,
  FileSystemError,
  LanguageModelError,
  LanguageModelTextPart,
  LanguageModelToolCallPart,
  Uri: {
    file,
    joinPath: (base, ...segments) => file(require('node:path').join(base.fsPath, ...segments)),
  },
  workspace: { workspaceFolders: [], textDocuments: [] },
  lm: { selectChatModels: async () => [] },
};

const load = Module._load;
Module._load = function loadWithFakeVscode(request, ...rest) {
  return request === 'vscode' ? vscode : load.call(this, request, ...rest);
};

module.exports = vscode;
