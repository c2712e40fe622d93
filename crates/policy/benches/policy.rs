//! Per-call cost of the policy layer on a realistic rule set: 10 blocked
//! tools (some globs), 10 blocked patterns, ~500-byte arguments.

use std::hint::black_box;

use bridge_policy::paths::OpenMode;
use bridge_policy::{Guard, PermissionPolicy, PermissionRules, WorkspacePolicy, WorkspaceRoot};
use bridge_testkit::TempWorkspace;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|item| (*item).to_owned()).collect()
}

fn realistic_rules() -> PermissionRules {
    PermissionRules {
        allowed_tools: Vec::new(),
        protected_files: Vec::new(),
        blocked_tools: strings(&[
            "delete_repo",
            "github__delete_*",
            "format_disk",
            "kubectl_*",
            "drop_database",
            "send_email",
            "aws__iam_*",
            "gcloud_*",
            "shutdown",
            "ssh_exec",
        ]),
        ask_tools: strings(&["shell", "git_push"]),
        blocked_patterns: strings(&[
            r"rm\s+-rf\s+/",
            r"(?i)drop\s+table",
            r"\.ssh/id_[a-z0-9]+",
            r"/etc/(passwd|shadow)",
            r"curl[^|]*\|\s*(ba)?sh",
            r"(?i)AKIA[0-9A-Z]{16}",
            r"ghp_[A-Za-z0-9]{36}",
            r"mkfs\.",
            r"dd\s+if=",
            r":\(\)\s*\{",
        ]),
    }
}

/// A write call with ~500 bytes of arguments that no rule objects to.
fn realistic_args() -> Value {
    let args = json!({
        "path": "src/components/widgets/table/row.rs",
        "edits": [
            {"oldText": "fn render(&self) -> Html {\n    html! { <tr>{ for self.cells.iter() }</tr> }\n}",
             "newText": "fn render(&self) -> Html {\n    let cells = self.cells.iter().map(Cell::view);\n    html! { <tr class=\"row\">{ for cells }</tr> }\n}"},
            {"oldText": "use crate::cell::Cell;", "newText": "use crate::cell::{Cell, CellView};"}
        ],
        "description": "Render table rows through CellView so that cells can style themselves; keeps the old API.",
        "dryRun": false
    });
    let size = serde_json::to_string(&args)
        .map(|text| text.len())
        .unwrap_or(0);
    assert!((400..=700).contains(&size), "args are {size} bytes");
    args
}

fn bench_policy(c: &mut Criterion) {
    let ws = TempWorkspace::new();
    ws.write("src/components/widgets/table/row.rs", "fn main() {}\n");
    let rules = realistic_rules();
    let permission = PermissionPolicy::compile(&rules).unwrap_or_else(|err| panic!("{err}"));
    let root = WorkspaceRoot::new(ws.path()).unwrap_or_else(|err| panic!("{err}"));
    let workspace = WorkspacePolicy::from_yaml(
        "writes:\n  allow: [\"src/**\"]\n  deny: [\"**/node_modules/**\", \"**/dist/**\"]\n",
        "bench.yaml",
    )
    .unwrap_or_else(|err| panic!("{err}"));
    let guard = Guard::new(root.clone(), permission.clone(), workspace, false);
    let args = realistic_args();

    c.bench_function("permission_evaluate_allow", |b| {
        b.iter(|| permission.evaluate(black_box("apply_edits"), black_box(&args)))
    });
    c.bench_function("permission_evaluate_blocked_glob", |b| {
        b.iter(|| permission.evaluate(black_box("github__delete_branch"), black_box(&args)))
    });
    c.bench_function("guard_check_call_allow", |b| {
        b.iter(|| guard.check_call(black_box("apply_edits"), black_box(&args)))
    });
    c.bench_function("paths_resolve_existing_nested", |b| {
        b.iter(|| root.resolve(black_box("src/components/widgets/table/row.rs")))
    });
    c.bench_function("guard_resolve_write_nested", |b| {
        b.iter(|| guard.resolve_write(black_box("src/components/widgets/table/row.rs")))
    });
    // The open itself, side by side: by path (what every tool did before
    // the filesystem boundary) and beneath the root's handle (what they do).
    let resolved = root
        .resolve("src/components/widgets/table/row.rs")
        .unwrap_or_else(|err| panic!("{err}"));
    c.bench_function("open_by_path_nested", |b| {
        b.iter(|| std::fs::File::open(black_box(&resolved)))
    });
    c.bench_function("open_beneath_root_nested", |b| {
        b.iter(|| root.open_file(black_box(&resolved), OpenMode::Read))
    });
}

criterion_group!(benches, bench_policy);
criterion_main!(benches);
