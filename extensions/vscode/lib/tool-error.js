'use strict';

/**
 * A tool call that failed in a way the caller can act on: sent back as
 * `tool.result {error: message, errorCode: code}`.
 */
class ToolError extends Error {
  /**
   * @param {'INVALID_ARGUMENTS'|'NOT_FOUND'|'UNAUTHORIZED'|'NOT_CONFIGURED'|'INTERNAL'|'CANCELLED'} code
   * @param {string} message what failed, on which input
   */
  constructor(code, message) {
    super(message);
    this.name = 'ToolError';
    this.code = code;
  }
}

module.exports = { ToolError };
