//! What the audit log costs a tool call: `ensure_writable` before the call
//! and `append` after it, one thread and four threads at once. Each sample
//! ends with everything on disk (`AuditLog::flush`), so a writer that only
//! queues is charged for its writes too: the figure is the sustained cost
//! per call, not just the time to hand the entry over. `caller` is that
//! hand-over alone: what the calling thread waits, in runs shorter than the
//! queue, flushed between runs outside the timing.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bridge_policy::audit::{AUDIT_QUEUE_CAPACITY, summarize_for_audit};
use bridge_policy::{AuditEntry, AuditLog};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

/// An entry as `Session::call_tool` records a write: ~500 bytes of input,
/// a short result. No timestamp: the log stamps the time of the call.
fn realistic_entry() -> AuditEntry {
    let input = summarize_for_audit(&json!({
        "path": "src/components/widgets/table/row.rs",
        "content": "fn render(row: &Row) -> Html {\n    html! { <tr>{ for row.cells.iter().map(cell) }</tr> }\n}\n".repeat(4),
    }));
    AuditEntry {
        timestamp: String::new(),
        session_id: "s-4f1c2d9e".to_owned(),
        hook: "toolCall:gateway".to_owned(),
        tool: "create_file".to_owned(),
        input,
        output: json!({"type": "success", "output": "created src/components/widgets/table/row.rs (372 bytes)"}),
        decision: "allow".to_owned(),
        elapsed_ms: 1,
        approval: None,
    }
}

/// `iterations` calls spread over `threads` threads, then a flush.
fn run(log: &Arc<AuditLog>, entry: &AuditEntry, threads: u64, iterations: u64) -> Duration {
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                for _ in 0..iterations / threads {
                    black_box(log.ensure_writable()).ok();
                    black_box(log.append(entry)).ok();
                }
            });
        }
    });
    log.flush().ok();
    started.elapsed()
}

/// The caller's time alone: runs of at most half the queue, each flushed
/// outside the timing, so that the caller never waits for room.
fn caller(log: &AuditLog, entry: &AuditEntry, iterations: u64) -> Duration {
    let run = (AUDIT_QUEUE_CAPACITY / 2) as u64;
    let mut spent = Duration::ZERO;
    let mut left = iterations;
    while left > 0 {
        let now = left.min(run);
        let started = Instant::now();
        for _ in 0..now {
            black_box(log.ensure_writable()).ok();
            black_box(log.append(entry)).ok();
        }
        spent += started.elapsed();
        log.flush().ok();
        left -= now;
    }
    spent
}

fn audit(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap_or_else(|err| panic!("temp dir: {err}"));
    let log = Arc::new(AuditLog::new(dir.path()));
    let entry = realistic_entry();
    let mut group = c.benchmark_group("audit");
    for threads in [1, 4] {
        group.bench_function(format!("ensure_writable+append/{threads}-threads"), |b| {
            b.iter_custom(|iterations| run(&log, &entry, threads, iterations.max(threads)))
        });
    }
    group.bench_function("ensure_writable+append/caller", |b| {
        b.iter_custom(|iterations| caller(&log, &entry, iterations))
    });
    group.finish();
}

criterion_group!(benches, audit);
criterion_main!(benches);
