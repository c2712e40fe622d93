//! Tests of symbols on realistic source files of each supported language.
#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns may panic too.

use bridge_engine::ToolFailure;
use bridge_policy::PermissionRules;
use bridge_testkit::TempWorkspace;
use bridge_tools::ToolSettings;
use serde_json::{Value, json};

use crate::common::{runner, runner_with};

async fn outline(ws: &TempWorkspace, path: &str) -> Result<Value, ToolFailure> {
    runner(ws, false)
        .call("symbols", json!({"path": path}))
        .await
}

/// (name, kind, line, endLine, container) per symbol, in result order.
type Row = (String, String, u64, u64, Option<String>);

fn rows(result: &Value) -> Vec<Row> {
    result["symbols"]
        .as_array()
        .expect("symbols array")
        .iter()
        .map(|symbol| {
            (
                symbol["name"].as_str().expect("name").to_owned(),
                symbol["kind"].as_str().expect("kind").to_owned(),
                symbol["line"].as_u64().expect("line"),
                symbol["endLine"].as_u64().expect("endLine"),
                symbol
                    .get("container")
                    .map(|c| c.as_str().expect("container").to_owned()),
            )
        })
        .collect()
}

fn row(name: &str, kind: &str, line: u64, end_line: u64, container: Option<&str>) -> Row {
    (
        name.to_owned(),
        kind.to_owned(),
        line,
        end_line,
        container.map(str::to_owned),
    )
}

const RUST_SOURCE: &str = r#"use std::fmt;

pub const MAX_RETRIES: u32 = 3;

/// A client.
pub struct Client<T> {
    inner: T,
}

pub enum Mode {
    Fast,
    Safe,
}

pub trait Transport {
    fn send(&self, bytes: &[u8]) -> usize;
    fn close(&mut self) {}
}

impl<T: Transport> Client<T> {
    pub fn new(inner: T) -> Self {
        fn helper() {}
        Self { inner }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "mode")
    }
}

mod tests {
    fn it_works() {}
}

type Result2 = Result<(), ()>;

macro_rules! shout {
    () => {};
}

pub fn run() {}
"#;

#[tokio::test]
async fn rust_items_methods_and_impl_containers() {
    let ws = TempWorkspace::new();
    ws.write("src/client.rs", RUST_SOURCE);
    let result = outline(&ws, "src/client.rs").await.unwrap();
    assert_eq!(result["path"], "src/client.rs");
    assert_eq!(result["language"], "rust");
    assert_eq!(
        rows(&result),
        [
            row("MAX_RETRIES", "const", 3, 3, None),
            row("Client", "struct", 6, 8, None),
            row("Mode", "enum", 10, 13, None),
            row("Transport", "trait", 15, 18, None),
            row("send", "method", 16, 16, Some("Transport")),
            row("close", "method", 17, 17, Some("Transport")),
            row("Client<T>", "impl", 20, 25, None),
            row("new", "method", 21, 24, Some("Client")),
            row("helper", "function", 22, 22, Some("new")),
            row("fmt::Display for Mode", "impl", 27, 31, None),
            row("fmt", "method", 28, 30, Some("Mode")),
            row("tests", "module", 33, 35, None),
            row("it_works", "function", 34, 34, Some("tests")),
            row("Result2", "type", 37, 37, None),
            row("shout", "macro", 39, 41, None),
            row("run", "function", 43, 43, None),
        ]
    );
}

const PYTHON_SOURCE: &str = r#"import functools


class Repository:
    """Stores things."""

    def __init__(self, path):
        self.path = path

    @functools.cache
    def load(self):
        def parse(line):
            return line.strip()
        return [parse(l) for l in open(self.path)]

    class Meta:
        ordering = "name"


def main():
    repo = Repository(".")
    print(repo.load())
"#;

#[tokio::test]
async fn python_classes_methods_and_nested_functions() {
    let ws = TempWorkspace::new();
    ws.write("app/repo.py", PYTHON_SOURCE);
    let result = outline(&ws, "app/repo.py").await.unwrap();
    assert_eq!(result["language"], "python");
    assert_eq!(
        rows(&result),
        [
            row("Repository", "class", 4, 17, None),
            row("__init__", "method", 7, 8, Some("Repository")),
            row("load", "method", 11, 14, Some("Repository")),
            row("parse", "function", 12, 13, Some("load")),
            row("Meta", "class", 16, 17, Some("Repository")),
            row("main", "function", 20, 22, None),
        ]
    );
}

const TYPESCRIPT_SOURCE: &str = r#"export interface Charge {
  amount: number;
  describe(): string;
}

export type Currency = "EUR" | "USD";

export enum Status {
  Ok,
  Failed,
}

export abstract class BaseClient {
  abstract send(body: string): Promise<void>;
}

export class PaymentClient extends BaseClient {
  private retries = 3;

  constructor(private readonly url: string) {
    super();
  }

  async send(body: string): Promise<void> {
    await fetch(this.url, { method: "POST", body });
  }

  onError = (err: Error) => {
    console.error(err);
  };
}

export function createClient(url: string): PaymentClient {
  return new PaymentClient(url);
}

export const formatAmount = (cents: number): string => (cents / 100).toFixed(2);

namespace Internal {
  export function secret() {}
}
"#;

#[tokio::test]
async fn typescript_interfaces_classes_methods_and_functions() {
    let ws = TempWorkspace::new();
    ws.write("web/client.ts", TYPESCRIPT_SOURCE);
    let result = outline(&ws, "web/client.ts").await.unwrap();
    assert_eq!(result["language"], "typescript");
    assert_eq!(
        rows(&result),
        [
            row("Charge", "interface", 1, 4, None),
            row("describe", "method", 3, 3, Some("Charge")),
            row("Currency", "type", 6, 6, None),
            row("Status", "enum", 8, 11, None),
            row("BaseClient", "class", 13, 15, None),
            row("send", "method", 14, 14, Some("BaseClient")),
            row("PaymentClient", "class", 17, 31, None),
            row("constructor", "method", 20, 22, Some("PaymentClient")),
            row("send", "method", 24, 26, Some("PaymentClient")),
            row("onError", "method", 28, 30, Some("PaymentClient")),
            row("createClient", "function", 33, 35, None),
            row("formatAmount", "function", 37, 37, None),
            row("Internal", "module", 39, 41, None),
            row("secret", "function", 40, 40, Some("Internal")),
        ]
    );
}

const TSX_SOURCE: &str = r#"import React from "react";

interface ButtonProps {
  label: string;
}

export function Button({ label }: ButtonProps) {
  return <button className="btn">{label}</button>;
}

export const Card = ({ title }: { title: string }) => (
  <div>
    <h1>{title}</h1>
  </div>
);
"#;

#[tokio::test]
async fn tsx_components() {
    let ws = TempWorkspace::new();
    ws.write("web/Button.tsx", TSX_SOURCE);
    let result = outline(&ws, "web/Button.tsx").await.unwrap();
    assert_eq!(result["language"], "tsx");
    assert_eq!(
        rows(&result),
        [
            row("ButtonProps", "interface", 3, 5, None),
            row("Button", "function", 7, 9, None),
            row("Card", "function", 11, 15, None),
        ]
    );
}

const JAVASCRIPT_SOURCE: &str = r#"const express = require("express");

class Router {
  constructor() {
    this.routes = [];
  }

  add(path, handler) {
    this.routes.push({ path, handler });
  }

  handle = (req) => this.routes.find((r) => r.path === req.path);
}

function* ids() {
  yield 1;
}

const render = function (props) {
  return <App {...props} />;
};

module.exports = { Router };
"#;

#[tokio::test]
async fn javascript_and_jsx_classes_and_functions() {
    let ws = TempWorkspace::new();
    ws.write("lib/router.jsx", JAVASCRIPT_SOURCE);
    let result = outline(&ws, "lib/router.jsx").await.unwrap();
    assert_eq!(result["language"], "javascript");
    assert_eq!(
        rows(&result),
        [
            row("Router", "class", 3, 13, None),
            row("constructor", "method", 4, 6, Some("Router")),
            row("add", "method", 8, 10, Some("Router")),
            row("handle", "method", 12, 12, Some("Router")),
            row("ids", "function", 15, 17, None),
            row("render", "function", 19, 21, None),
        ]
    );
}

const GO_SOURCE: &str = r#"package server

import "net/http"

const DefaultPort = 8080

var (
	started = false
)

type Handler interface {
	Serve(w http.ResponseWriter, r *http.Request)
}

type Server struct {
	port int
}

type Port = int

type Cache[K comparable, V any] struct {
	items map[K]V
}

func New(port int) *Server {
	return &Server{port: port}
}

func (s *Server) Start() error {
	return nil
}

func (c Cache[K, V]) Get(key K) V {
	return c.items[key]
}
"#;

#[tokio::test]
async fn go_types_functions_and_receiver_methods() {
    let ws = TempWorkspace::new();
    ws.write("server/server.go", GO_SOURCE);
    let result = outline(&ws, "server/server.go").await.unwrap();
    assert_eq!(result["language"], "go");
    assert_eq!(
        rows(&result),
        [
            row("DefaultPort", "const", 5, 5, None),
            row("started", "variable", 8, 8, None),
            row("Handler", "interface", 11, 13, None),
            row("Serve", "method", 12, 12, Some("Handler")),
            row("Server", "struct", 15, 17, None),
            row("Port", "type", 19, 19, None),
            row("Cache", "struct", 21, 23, None),
            row("New", "function", 25, 27, None),
            row("Start", "method", 29, 31, Some("Server")),
            row("Get", "method", 33, 35, Some("Cache")),
        ]
    );
}

#[tokio::test]
async fn unsupported_extensions_list_the_supported_ones() {
    let ws = TempWorkspace::new();
    ws.write("style.css", "body {}\n");
    ws.write("Makefile", "all:\n");
    for path in ["style.css", "Makefile"] {
        let err = outline(&ws, path).await.unwrap_err();
        assert_eq!(err.code, "invalid_arguments", "{path}");
        let message = err.to_string();
        assert!(message.contains(path), "{message}");
        for extension in ["rs", "py", "ts", "tsx", "js", "jsx", "go"] {
            assert!(message.contains(extension), "{message}");
        }
    }
}

#[tokio::test]
async fn syntax_errors_still_give_the_symbols_that_parse() {
    let ws = TempWorkspace::new();
    ws.write(
        "broken.py",
        "def ok():\n    pass\n\ndef broken(:\n\nclass Later:\n    def m(self):\n        pass\n",
    );
    let result = outline(&ws, "broken.py").await.unwrap();
    let names: Vec<String> = rows(&result).into_iter().map(|(name, ..)| name).collect();
    assert!(names.contains(&"ok".to_owned()), "{names:?}");
    assert!(names.contains(&"Later".to_owned()), "{names:?}");
}

#[tokio::test]
async fn missing_binary_oversized_and_outside_files_are_refused() {
    let ws = TempWorkspace::new();
    ws.write("bin.rs", b"fn x() {}\x00\x00");
    ws.write("big.rs", "fn f() {}\n".repeat(100));

    let err = outline(&ws, "nope.rs").await.unwrap_err();
    assert_eq!(err.code, "not_found");
    let err = outline(&ws, "bin.rs").await.unwrap_err();
    assert_eq!(err.code, "binary_file");
    let err = outline(&ws, "../escape.rs").await.unwrap_err();
    assert_eq!(err.code, "policy_denied");

    let settings = ToolSettings {
        symbols_max_bytes: 100,
        ..ToolSettings::default()
    };
    let small = runner_with(&ws, false, settings, PermissionRules::default());
    let err = small
        .call("symbols", json!({"path": "big.rs"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "too_large");
}

#[tokio::test]
async fn symbols_has_its_own_size_limit_below_read_max_bytes() {
    let ws = TempWorkspace::new();
    ws.write("mid.rs", "fn f() {}\n".repeat(30)); // 300 bytes
    let settings = ToolSettings {
        read_max_bytes: 1000,
        symbols_max_bytes: 200,
        ..ToolSettings::default()
    };
    let runner = runner_with(&ws, false, settings, PermissionRules::default());
    let err = runner
        .call("symbols", json!({"path": "mid.rs"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "too_large");
    assert_eq!(
        err.message,
        "mid.rs is 300 bytes, over the limit of 200 bytes"
    );
    // read_file still returns the same file whole: only parsing is limited.
    let read = runner
        .call("read_file", json!({"path": "mid.rs"}))
        .await
        .unwrap();
    assert_eq!(read["totalLines"], 30);
    assert_eq!(ToolSettings::default().symbols_max_bytes, 1024 * 1024);
}

/// Runs `symbols` on hostile input and checks it ends quickly (it once took
/// hours of CPU), with an outline or an error that says why it gave up.
async fn outline_ends_quickly(ws: &TempWorkspace, path: &str) -> Result<Value, ToolFailure> {
    let started = std::time::Instant::now();
    let outcome = outline(ws, path).await;
    let elapsed = started.elapsed();
    // The time budget is 2 s; the margin covers a debug build on a loaded machine.
    assert!(
        elapsed < std::time::Duration::from_secs(8),
        "{path}: took {elapsed:?}"
    );
    match &outcome {
        Ok(result) => assert!(result["symbols"].is_array(), "{result}"),
        Err(err) if err.code == "timeout" && err.message.contains("2 s") => {}
        Err(err) => {
            assert_eq!(err.code, "failed", "{path}: {err}");
            let message = err.to_string();
            assert!(
                message.contains(path) && message.contains("too deeply nested or malformed"),
                "{message}"
            );
        }
    }
    outcome
}

#[tokio::test]
async fn eighty_thousand_unclosed_braces_are_refused_as_malformed_at_once() {
    let ws = TempWorkspace::new();
    ws.write("o.rs", format!("fn f() {}\n", "{".repeat(80_000)));
    let err = outline_ends_quickly(&ws, "o.rs").await.unwrap_err();
    // Caught by the pre-check, before the quadratic query even starts.
    assert_eq!(err.code, "failed");
}

#[tokio::test]
async fn a_megabyte_of_unclosed_brackets_ends_within_the_time_budget() {
    let ws = TempWorkspace::new();
    // Just under the default symbols_max_bytes, so it is parsed, not refused.
    ws.write("b.ts", format!("function f() {}\n", "(".repeat(1_000_000)));
    ws.write(
        "b.py",
        format!("def f():\n    x = {}\n", "[".repeat(1_000_000)),
    );
    outline_ends_quickly(&ws, "b.ts").await.unwrap_err();
    outline_ends_quickly(&ws, "b.py").await.unwrap_err();
}

#[tokio::test]
async fn a_megabyte_of_random_brackets_and_quotes_ends_within_the_time_budget() {
    let ws = TempWorkspace::new();
    // A fixed pseudo-random sequence (xorshift) keeps the test reproducible.
    let alphabet = b"{}[]()\"'`<>";
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let noise: Vec<u8> = (0..1_000_000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            alphabet[(state % alphabet.len() as u64) as usize]
        })
        .collect();
    ws.write("r.tsx", noise);
    outline_ends_quickly(&ws, "r.tsx").await.ok();
}

#[tokio::test]
async fn ordinary_code_with_many_symbols_is_not_cut_by_the_limits() {
    let ws = TempWorkspace::new();
    let copies = 200;
    ws.write("many.rs", RUST_SOURCE.repeat(copies));
    let result = outline(&ws, "many.rs").await.unwrap();
    let single = rows(&outline_of(&ws, "one.rs", RUST_SOURCE).await);
    assert_eq!(rows(&result).len(), single.len() * copies);
}

async fn outline_of(ws: &TempWorkspace, path: &str, source: &str) -> Value {
    ws.write(path, source);
    outline(ws, path).await.unwrap()
}
